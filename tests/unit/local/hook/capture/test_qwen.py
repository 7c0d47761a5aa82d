"""Reading Qwen Code's own session file, on one a real Qwen Code 0.24.4 wrote
(tests/fixtures/transcripts/qwen-0.24.4, made by its record.py), plus hand-made records for
what a scripted run does not reach."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from sessionvault.local.hook.capture import qwen
from sessionvault.local.hook.capture.transcript import json_lines

from .gemini_family import CWD, TRANSCRIPTS, Recording, SessionFileSpec, write_records

VERSION = "0.24.4"
FIXTURES = TRANSCRIPTS / f"qwen-{VERSION}"
HOME = FIXTURES / "home"
SESSION = next((HOME / ".qwen" / "projects" / "-home-user-widget" / "chats").glob("*.jsonl"))
SESSION_ID = SESSION.stem
QWEN = Recording(
    client="qwen",
    reader=qwen,
    name="Qwen Code",
    package="@qwen-code/qwen-code",
    version=VERSION,
    session=SESSION,
    session_id=SESSION_ID,
    hook_events=("SessionStart", "UserPromptSubmit", "PreCompact", "PostCompact", "Stop"),
    unknown_id="00000000-0000-0000-0000-000000000000",
    junk=(
        b'[1]\n"x"\n{"type": "tool_result", "toolCallResult": {"callId": 3}}\n'
        b'{"type": "user", "message": 7}\n{"type": "assistant", "message": {"parts": [5]}}\n\xff\n'
    ),
)
hooks = QWEN.hooks


class TestQwenCodeSessionFile(SessionFileSpec):
    """What Qwen Code's reader does as Gemini CLI's does (gemini_family.py): the asks are the
    typed prompts (provenance real_user), the todos are the last todo_write list, the file is
    written then changed with edit."""

    recording = QWEN


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "cwd": "/p", "message": {"role": "user", "parts": [{"text": text}]}, **extra}


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    part = {"functionCall": {"id": call_id, "name": name, "args": args}}
    return {"type": "assistant", "message": {"role": "model", "parts": [part]}}


def result(call_id: str, status: str, output: str, name: str = "run_shell_command") -> dict[str, Any]:
    part = {"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}
    outcome = {"callId": call_id, "status": status}
    return {"type": "tool_result", "message": {"role": "user", "parts": [part]}, "toolCallResult": outcome}


# The real session file.


def test_the_fixture_is_qwen_code_0_24_4_with_every_record_kind_the_reader_uses() -> None:
    """If this fails after the fixture was remade with another Qwen Code, its session format
    changed: check each shape below against the new file before moving VERSION."""
    records = list(json_lines(SESSION))
    versions = {r.get("version") for r in records}
    assert versions == {VERSION}, f"written by Qwen Code {versions}, the reader knows {VERSION}"
    kinds = {(r["type"], r.get("subtype")) for r in records}
    calls = [
        p["functionCall"]
        for r in records
        for p in r.get("message", {}).get("parts", [])
        if "functionCall" in p
    ]
    results = [r["toolCallResult"] for r in records if r["type"] == "tool_result"]
    shapes = {
        "every record has uuid, sessionId, cwd": all({"uuid", "sessionId", "cwd"} <= set(r) for r in records),
        "typed prompts (user, real_user)": sum(r.get("provenance") == "real_user" for r in records) == 2,
        "record kinds": {("user", None), ("assistant", None), ("tool_result", None)} <= kinds,
        "compression record": ("system", "chat_compression") in kinds,
        "call fields": all({"id", "name", "args"} <= set(c) for c in calls),
        "tool names": {c["name"] for c in calls}
        == {"todo_write", "write_file", "run_shell_command", "read_file", "edit"},
        "result fields": all({"callId", "status"} <= set(r) for r in results),
    }
    assert all(shapes.values()), f"no longer as in {VERSION}: {[k for k, ok in shapes.items() if not ok]}"


def test_the_compact_summary_is_the_state_snapshot_without_the_resume_instruction() -> None:
    summary = qwen.read(SESSION).compact_summary
    assert summary.startswith("<state_snapshot>") and summary.endswith("</state_snapshot>")
    assert hooks("PostCompact")[0]["compact_summary"] == summary


def test_a_one_shot_run_fires_no_session_end_hook() -> None:
    assert not (FIXTURES / "hooks" / "SessionEnd.jsonl").exists()


# Cut, torn and odd input.


def test_a_result_without_its_call_still_names_the_failed_command(tmp_path: Path) -> None:
    output = "Command: make test\nDirectory: (root)\nOutput: E   assert 1 == 2\nError: (none)\nExit Code: 2"
    path = write_records(tmp_path / "s.jsonl", result("c1", "error", output))
    assert list(qwen.read(path).failures) == ["make test: E   assert 1 == 2"]


def test_a_result_counts_once_and_a_failed_edit_is_not_a_change(tmp_path: Path) -> None:
    shell = "Command: make\nOutput: fatal: no widget\nExit Code: 1"
    path = write_records(
        tmp_path / "s.jsonl",
        user("go"),
        call("a", "edit", file_path="/p/x.py"),
        result("a", "error", "File /p/x.py has not been read in this session.", "edit"),
        call("b", "run_shell_command", command="make"),
        result("b", "error", shell),
        result("b", "error", shell),
    )
    read = qwen.read(path)
    assert not read.files and list(read.failures) == ["make: fatal: no widget"]


def test_typed_prompts_only_are_asks_as_the_user_typed_them(tmp_path: Path) -> None:
    path = write_records(
        tmp_path / "s.jsonl",
        user("@notes/plan.md expanded file text", systemPayload={"displayText": "look at @notes/plan.md"}),
        user("a cron prompt", subtype="cron"),
        user("a goal nudge", provenance="goal_runtime"),
        user("also this", subtype="mid_turn_user_message"),
        user("   "),
    )
    assert list(qwen.read(path).asks) == ["look at @notes/plan.md", "also this"]


def test_thoughts_are_not_the_last_message(tmp_path: Path) -> None:
    parts = [{"text": "thinking...", "thought": True}, {"text": "The answer."}]
    answer = {"type": "assistant", "message": {"role": "model", "parts": parts}}
    thought_only = {"type": "assistant", "message": {"role": "model", "parts": parts[:1]}}
    path = write_records(tmp_path / "s.jsonl", answer, thought_only)
    assert qwen.read(path).last_message == "The answer."


# Finding the file.


def test_locate_finds_the_newest_session_of_the_project_by_its_sanitized_path() -> None:
    assert qwen.project_folder(HOME, CWD).name == "-home-user-widget"
    assert qwen.locate(HOME, CWD) == SESSION


def test_locate_returns_none_for_an_unsafe_id() -> None:
    assert qwen.locate(HOME, CWD, "../*") is None


def test_locate_prefers_the_most_recently_written_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(HOME, home)
    chats = qwen.project_folder(home, CWD) / "chats"
    newer = write_records(chats / "aaaaaaaa-new.jsonl", user("new"))
    os.utime(chats / SESSION.name, (1, 1))
    assert qwen.locate(home, CWD) == newer
