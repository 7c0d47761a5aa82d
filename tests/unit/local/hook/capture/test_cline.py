"""Reading the Cline CLI's own session (one JSON document of messages, streamed), on one a real
Cline 3.0.65 wrote (tests/fixtures/transcripts/cline-3.0.65, made by its record.py: the first
turn of the scripted run every client's fixture has), plus hand-made documents for what a
scripted run does not reach; and the hook input Cline gives, made the common one."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from sessionvault.local.hook.capture import cline

from .gemini_family import MAKEFILE, TRANSCRIPTS
from .recorded_run import CWD, FAILURE, PROMPTS

VERSION = "3.0.65"
FIXTURES = TRANSCRIPTS / f"cline-{VERSION}"
HOME = FIXTURES / "home"
SESSION = next((HOME / ".cline" / "data" / "sessions").glob("*/*.messages.json"))
SESSION_ID = SESSION.parent.name
MARKER = "sv-marker-cline-run-1"


def hook(event: str) -> dict[str, Any]:
    [payload] = [
        json.loads(line) for line in (FIXTURES / "hooks" / f"{event}.jsonl").read_text().splitlines()
    ]
    return payload


def document(path: Path, *messages: dict[str, Any], head: str = "x" * 10) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "system_prompt": head, "messages": list(messages)}, indent=2))
    return path


def text(role: str, said: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": said}]}


def call(call_id: str, name: str, **given: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": given}],
    }


def result(call_id: str, name: str, content: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "name": name, "content": content}
    return {"role": "user", "content": [block]}


# The real session.


def test_the_makefile_pins_the_cline_the_fixture_was_recorded_with() -> None:
    assert f"cline@{VERSION}" in MAKEFILE.read_text()


def test_the_fixture_holds_every_shape_the_reader_uses() -> None:
    """If this fails after the fixture was remade with another Cline, its format changed."""
    data = json.loads(SESSION.read_text())
    meta = json.loads(SESSION.with_name(f"{SESSION_ID}.json").read_text())
    blocks = [b for m in data["messages"] for b in m["content"]]
    shapes = {
        "version": data["origin"]["version"] == VERSION and meta["messages_path"].endswith(SESSION.name),
        "typed input": blocks[0]["text"].startswith("<user_input mode="),
        "tools": [b["name"] for b in blocks if b["type"] == "tool_use"] == ["editor", "run_commands"],
        "command result": isinstance([b for b in blocks if b["type"] == "tool_result"][-1]["content"], list),
    }
    assert all(shapes.values()), f"no longer as in {VERSION}: {[k for k, ok in shapes.items() if not ok]}"


def test_the_reader_finds_the_ask_file_failure_and_last_reply() -> None:
    read = cline.read(SESSION)
    assert read.client == "cline-cli" and read.session_id == SESSION_ID and read.cwd == str(CWD)
    assert list(read.asks) == PROMPTS[:1] and list(read.files) == ["notes/plan.md"]
    assert list(read.failures) == [FAILURE] and MARKER in read.last_message and read.todos == {}


def test_the_hook_input_is_made_the_common_fields() -> None:
    done = cline.adapt(hook("TaskComplete"))
    assert done["session_id"] == SESSION_ID and done["cwd"] == str(CWD)
    assert done["hook_event_name"] == "TaskComplete" and MARKER in done["last_assistant_message"]
    assert cline.adapt(hook("TaskStart"))["hook_event_name"] == ""  # not an end of work
    assert cline.adapt({"sessionContext": 5, "workspaceRoots": [3], "turn": []}) == {
        "sessionContext": 5,
        "workspaceRoots": [3],
        "turn": [],
        "hook_event_name": "",
    }


def test_a_cut_document_keeps_what_came_before_the_cut(tmp_path: Path) -> None:
    raw = SESSION.read_bytes()
    path = tmp_path / SESSION.name
    path.write_bytes(raw[: raw.rindex(MARKER.encode())])
    read = cline.read(path)
    assert list(read.failures) == [FAILURE] and MARKER not in read.last_message
    for end in range(0, len(raw), max(1, len(raw) // 61)):
        path.write_bytes(raw[:end])
        cline.read(path)


# Hand-made documents.


def test_messages_are_streamed_past_a_long_head_and_bounded(tmp_path: Path) -> None:
    many = [text("assistant", f"reply {n}") for n in range(500)]
    path = document(tmp_path / "s.messages.json", *many, head='"messages": [1] ' * 20_000)
    assert cline.read(path).last_message == "reply 499"
    huge = document(tmp_path / "h.messages.json", text("assistant", "a"), text("assistant", "b" * 5_000_000))
    assert cline.read(huge).last_message == "a"  # the oversized message ends the reading


def test_only_typed_input_is_an_ask_and_a_failed_edit_is_no_change(tmp_path: Path) -> None:
    failed = [
        {
            "query": "make",
            "result": "[Command exited with code 2]\n\n[stderr]\nfatal: no widget\n",
            "success": False,
        }
    ]
    path = document(
        tmp_path / "s.messages.json",
        text("user", '<user_input mode="act">Fix the widget.</user_input>'),
        text("user", "[SYSTEM] You still have team obligations."),
        text("user", "<hook_context>Resume here</hook_context>"),
        call("a", "editor", path="/p/x.py", old_text="a", new_text="b"),
        result("a", "editor", json.dumps({"success": False, "error": "no match"})),
        call("b", "run_commands", commands=["make", "ls"]),
        result("b", "run_commands", [*failed, {"query": "ls", "result": "x", "success": True}]),
    )
    read = cline.read(path)
    assert list(read.asks) == ["Fix the widget."] and not read.files
    assert list(read.failures) == ["make: fatal: no widget"]


# Finding the session.


def test_locate_by_id_or_by_the_sessions_folder(tmp_path: Path) -> None:
    assert cline.locate(HOME, CWD) == SESSION
    assert cline.locate(HOME, Path("/elsewhere"), SESSION_ID) == SESSION
    assert cline.locate(HOME, Path("/home/user/other")) is None and cline.locate(HOME, CWD, "../*") is None
    home = tmp_path / "home"
    shutil.copytree(HOME, home)
    newer = document(cline.sessions_folder(home) / "b" / "b.messages.json", text("assistant", "new"))
    newer.with_name("b.json").write_text(json.dumps({"cwd": str(CWD)}))
    os.utime(home / SESSION.relative_to(HOME), (1, 1))
    assert cline.locate(home, CWD) == newer


# The hook itself, with Cline's own input.


def test_the_checkpoint_hook_takes_clines_input_spools_0600_and_redacts(tmp_path: Path) -> None:
    """`hook.run` with the TaskComplete input the real run gave (no transcript path, no cwd):
    the adapted input finds the session, the checkpoint is redacted and spooled 0600 (the
    server is away here), and capture turned off for the repo spools nothing."""
    import stat
    import subprocess

    from sessionvault.local.hook.capture import hook as capture_hook
    from sessionvault.local.hook.capture import switch
    from sessionvault.local.hook.capture.spool import Spool
    from sessionvault.names import HOME_ENV, KEY_ENV, URL_ENV

    home = tmp_path / "home"
    shutil.copytree(HOME, home)
    project = tmp_path / "widget"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    secret = "AKIA" + "Z4QX7N2LWB3KD5HJ"
    said = hook("TaskComplete")
    payload = {**said, "workspaceRoots": [str(project)], "turn": {"outputText": f"Done; key {secret}"}}
    state = tmp_path / "state"
    env = {HOME_ENV: str(state), URL_ENV: "http://127.0.0.1:9/mcp", KEY_ENV: "sv_live_x"}
    done = capture_hook.run("cline-cli", payload, env, home)
    assert done.name == f"auto/cline-cli/{SESSION_ID}" and done.spooled == 1 and done.sent == 0
    [entry] = Spool(state).entries()
    assert stat.S_IMODE(entry.path.stat().st_mode) == 0o600
    text = entry.path.read_text()
    assert secret not in text and "sv-boom: widget config missing" in text
    switch.set_repo(state, capture_hook.current_repo(project), on=False)
    assert capture_hook.run("cline-cli", payload, env, home).skipped.startswith("turned off")
