"""Reading Factory Droid's own session file, on one a real Droid 0.225.2 wrote
(tests/fixtures/transcripts/droid-0.225.2, made by its record.py: the first turn of the scripted
run every client's fixture has; Droid cannot continue a session without an account), plus
hand-made records for what a scripted run does not reach."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from sessionvault.local.hook.capture import droid
from sessionvault.local.hook.capture.transcript import json_lines

from .gemini_family import MAKEFILE, TRANSCRIPTS, write_records
from .recorded_run import CWD, FAILURE, PROMPTS

VERSION = "0.225.2"
FIXTURES = TRANSCRIPTS / f"droid-{VERSION}"
HOME = FIXTURES / "home"
SESSION = next((HOME / ".factory" / "sessions" / "-home-user-widget").glob("*.jsonl"))
MARKER = "sv-marker-droid-run-1"


def hook(event: str) -> dict[str, Any]:
    [payload] = [
        json.loads(line) for line in (FIXTURES / "hooks" / f"{event}.jsonl").read_text().splitlines()
    ]
    return payload


def message(role: str, *blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": os.urandom(4).hex(),
        "message": {"role": role, "content": list(blocks)},
        **extra,
    }


def call(call_id: str, name: str, **given: Any) -> dict[str, Any]:
    return message("assistant", {"type": "tool_use", "id": call_id, "name": name, "input": given})


def result(call_id: str, content: str, error: bool = False) -> dict[str, Any]:
    return message(
        "user", {"type": "tool_result", "tool_use_id": call_id, "is_error": error, "content": content}
    )


# The real session file.


def test_the_makefile_pins_the_droid_the_fixture_was_recorded_with() -> None:
    assert f"@factory/cli-linux-x64@{VERSION}" in MAKEFILE.read_text()


def test_the_fixture_holds_every_record_kind_the_reader_uses() -> None:
    """If this fails after the fixture was remade with another Droid, its format changed:
    check each shape against the new file before moving VERSION."""
    records = list(json_lines(SESSION))
    kinds = {r["type"] for r in records}
    blocks = [b for r in records if r["type"] == "message" for b in r["message"]["content"]]
    shapes = {
        "kinds": {"session_start", "message"} <= kinds,
        "tool calls": {b["name"] for b in blocks if b["type"] == "tool_use"} == {"Create", "Execute"},
        "results": [b["is_error"] for b in blocks if b["type"] == "tool_result"] == [False, True],
        "hook records": any(r["message"].get("visibility") == "user_only" for r in records if "message" in r),
    }
    assert all(shapes.values()), f"no longer as in {VERSION}: {[k for k, ok in shapes.items() if not ok]}"


def test_the_reader_finds_the_ask_file_failure_and_last_reply() -> None:
    read = droid.read(SESSION)
    assert read.client == "droid" and read.session_id == SESSION.stem == hook("Stop")["session_id"]
    assert read.cwd == str(CWD) == hook("Stop")["cwd"]
    assert list(read.asks) == PROMPTS[:1]  # not the hook records, not the context reminders
    assert list(read.files) == ["notes/plan.md"] and list(read.failures) == [FAILURE]
    assert MARKER in read.last_message and read.todos == {} and not read.compact_summary


def test_every_hook_names_the_session_file_by_its_home_path() -> None:
    for event in ("SessionStart", "Stop", "SessionEnd"):
        assert hook(event)["transcript_path"] == "/home/user/" + str(SESSION.relative_to(HOME))


def test_a_torn_or_cut_file_reads_without_raising(tmp_path: Path) -> None:
    raw = SESSION.read_bytes()
    path = tmp_path / SESSION.name
    path.write_bytes(raw[: raw.rindex(MARKER.encode())])
    read = droid.read(path)
    assert list(read.failures) == [FAILURE] and MARKER not in read.last_message
    for end in range(0, len(raw), max(1, len(raw) // 61)):
        path.write_bytes(raw[:end])
        droid.read(path)


# Hand-made records.


def test_a_failed_edit_is_no_change_and_a_todo_list_is_read(tmp_path: Path) -> None:
    todos = [{"content": "Ship it", "status": "in_progress"}, {"content": "Test it", "status": "pending"}]
    path = write_records(
        tmp_path / "s.jsonl",
        {"type": "message", "message": 5},
        call("a", "Edit", file_path="/p/x.py", old_str="a", new_str="b"),
        result("a", "Error: old_str not found", error=True),
        call("b", "TodoWrite", todos=todos),
        result("b", "ok"),
        call("c", "Execute", command="make"),
        result(
            "c",
            "Error: Command failed (exit code: 2)\ncc main.c\nfatal: no widget\n\n"
            "[Process exited with code 2]",
            True,
        ),
    )
    read = droid.read(path)
    assert not read.files and read.todos == {"Ship it": "in_progress", "Test it": "pending"}
    assert list(read.failures) == ["make: fatal: no widget"]


def test_reminders_and_hook_records_are_not_asks(tmp_path: Path) -> None:
    text = {"type": "text", "text": "<system-reminder>\ntools\n</system-reminder>"}
    path = write_records(
        tmp_path / "s.jsonl",
        message("user", text),
        message("user", {"type": "text", "text": "injected"}, id="context-1"),
        {"type": "message", "message": {"role": "user", "content": [], "visibility": "user_only"}},
        message("user", {"type": "text", "text": "Fix the widget."}),
    )
    assert list(droid.read(path).asks) == ["Fix the widget."]


# Finding the file.


def test_locate_by_project_folder_or_id() -> None:
    assert droid.project_folder(HOME, CWD).name == "-home-user-widget"
    assert droid.locate(HOME, CWD) == SESSION
    assert droid.locate(HOME, Path("/elsewhere"), SESSION.stem) == SESSION
    assert droid.locate(HOME, Path("/home/user/other")) is None
    assert droid.locate(HOME, CWD, "../*") is None


def test_locate_keeps_underscores_in_the_folder_name_and_prefers_the_newest(tmp_path: Path) -> None:
    assert droid.project_folder(tmp_path, Path("/tmp/my_app.v2")).name == "-tmp-my_app.v2"
    home = tmp_path / "home"
    shutil.copytree(HOME, home)
    newer = write_records(droid.project_folder(home, CWD) / "aaaa.jsonl", message("user"))
    os.utime(home / SESSION.relative_to(HOME), (1, 1))
    assert droid.locate(home, CWD) == newer
