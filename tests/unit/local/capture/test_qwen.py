"""Reading Qwen Code's own session file, on one a real Qwen Code 0.24.4 wrote
(tests/fixtures/transcripts/qwen-0.24.4, made by its record.py), plus hand-made records for
what a scripted run does not reach."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from sessionvault.local.capture import qwen
from sessionvault.local.capture.transcript import json_lines

VERSION = "0.24.4"
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "transcripts" / f"qwen-{VERSION}"
MAKEFILE = Path(__file__).resolve().parents[4] / "Makefile"
HOME = FIXTURES / "home"
CWD = Path("/home/user/widget")
SESSION = next((HOME / ".qwen" / "projects" / "-home-user-widget" / "chats").glob("*.jsonl"))
SESSION_ID = SESSION.stem
PROMPTS = [
    "Plan the widget work, write notes/plan.md, then check the widget config.",
    "Note the missing config in the plan and tell me where we stand.",
]
TODOS = {
    "Draft the widget plan": "completed",
    "Check the widget config": "in_progress",
    "Ship the widget": "pending",
}
COMMAND = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\""
FAILURE = f"{COMMAND}: sv-boom: widget config missing"
MARKER = "sv-marker-qwen-run-2"


def hooks(event: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / "hooks" / f"{event}.jsonl").read_text().splitlines()]


def write_records(path: Path, *records: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


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
    pinned = re.search(r"@qwen-code/qwen-code@(\S+)", MAKEFILE.read_text())
    assert pinned and pinned.group(1) == VERSION, (
        f"the Makefile pins Qwen Code {pinned and pinned.group(1)}, this fixture is {VERSION}: "
        f"re-record it with tests/fixtures/transcripts/qwen-{VERSION}/record.py and recheck the reader"
    )
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


def test_the_session_id_and_project_folder_are_the_ones_the_hooks_reported() -> None:
    read = qwen.read(SESSION)
    assert read.client == "qwen"
    assert read.session_id == SESSION_ID == hooks("Stop")[0]["session_id"]
    assert read.cwd == str(CWD) == hooks("Stop")[0]["cwd"]


def test_the_asks_are_the_typed_prompts() -> None:
    assert list(qwen.read(SESSION).asks) == PROMPTS


def test_the_todos_are_the_last_todo_write_list_with_its_statuses() -> None:
    assert qwen.read(SESSION).todos == TODOS


def test_a_written_then_edited_file_is_listed_once_relative_to_the_project() -> None:
    assert list(qwen.read(SESSION).files) == ["notes/plan.md"]


def test_a_shell_command_that_exited_non_zero_is_a_failure_with_its_error_line() -> None:
    assert list(qwen.read(SESSION).failures) == [FAILURE]  # `ls notes` (Exit Code: 0) is not one


def test_the_last_message_is_the_final_answer_of_the_last_turn() -> None:
    assert MARKER in qwen.read(SESSION).last_message


def test_the_compact_summary_is_the_state_snapshot_without_the_resume_instruction() -> None:
    summary = qwen.read(SESSION).compact_summary
    assert summary.startswith("<state_snapshot>") and summary.endswith("</state_snapshot>")
    assert hooks("PostCompact")[0]["compact_summary"] == summary


def test_every_hook_payload_names_the_session_file_by_its_home_path() -> None:
    for event in ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "PostCompact"):
        for payload in hooks(event):
            assert payload["hook_event_name"] == event and payload["session_id"] == SESSION_ID
            assert payload["transcript_path"] == "/home/user/" + str(SESSION.relative_to(HOME))
    assert not (FIXTURES / "hooks" / "SessionEnd.jsonl").exists()  # a one-shot run fires none


# Cut, torn and odd input.


def test_a_torn_last_line_is_skipped_and_everything_before_it_kept(tmp_path: Path) -> None:
    raw = SESSION.read_bytes()
    path = tmp_path / "torn.jsonl"
    path.write_bytes(raw[: raw.rindex(MARKER.encode())])
    read = qwen.read(path)
    assert list(read.asks) == PROMPTS and read.todos == TODOS and list(read.failures) == [FAILURE]
    assert MARKER not in read.last_message


def test_a_file_cut_at_any_point_reads_without_raising(tmp_path: Path) -> None:
    raw = SESSION.read_bytes()
    path = tmp_path / "cut.jsonl"
    for end in range(0, len(raw), max(1, len(raw) // 97)):
        path.write_bytes(raw[:end])
        qwen.read(path)


def test_lines_that_are_not_records_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    junk = b'[1]\n"x"\n{"type": "tool_result", "toolCallResult": {"callId": 3}}\n'
    junk += b'{"type": "user", "message": 7}\n{"type": "assistant", "message": {"parts": [5]}}\n\xff\n'
    path.write_bytes(junk + SESSION.read_bytes())
    assert list(qwen.read(path).asks) == PROMPTS


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


def test_locate_finds_a_session_by_its_id_in_any_project() -> None:
    assert qwen.locate(HOME, CWD, SESSION_ID) == SESSION
    assert qwen.locate(HOME, Path("/somewhere/else"), SESSION_ID) == SESSION


def test_locate_returns_none_for_another_project_an_unknown_or_unsafe_id() -> None:
    assert qwen.locate(HOME, Path("/home/user/other")) is None
    assert qwen.locate(HOME, CWD, "00000000-0000-0000-0000-000000000000") is None
    assert qwen.locate(HOME, CWD, "../*") is None
    assert qwen.locate(HOME / "missing", CWD) is None


def test_locate_prefers_the_most_recently_written_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(HOME, home)
    chats = qwen.project_folder(home, CWD) / "chats"
    newer = write_records(chats / "aaaaaaaa-new.jsonl", user("new"))
    os.utime(chats / SESSION.name, (1, 1))
    assert qwen.locate(home, CWD) == newer
