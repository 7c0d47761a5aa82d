"""Reading GitHub Copilot CLI's own session (events.jsonl and the task list in session.db), on
one a real Copilot CLI 1.0.102 wrote (tests/fixtures/transcripts/copilot-cli-1.0.102, made by its
record.py: the same scripted run as every client's), plus hand-made events for what a scripted
run does not reach."""

from __future__ import annotations

import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from sessionvault.local.hook.capture import copilot_cli
from sessionvault.local.hook.capture.transcript import json_lines

from .gemini_family import CWD, TRANSCRIPTS, Recording, SessionFileSpec, write_records
from .recorded_run import FAILURE, PROMPTS, TODOS

VERSION = "1.0.102"
FIXTURES = TRANSCRIPTS / f"copilot-cli-{VERSION}"
HOME = FIXTURES / "home"
SESSION = next((HOME / ".copilot" / "session-state").glob("*/events.jsonl"))
SESSION_ID = SESSION.parent.name
COPILOT = Recording(
    client="copilot-cli",
    reader=copilot_cli,
    name="GitHub Copilot CLI",
    package="@github/copilot",
    version=VERSION,
    session=SESSION,
    session_id=SESSION_ID,
    hook_events=("PreCompact", "Stop"),  # the events whose input names the transcript
    unknown_id="00000000-0000-0000-0000-000000000000",
    junk=(
        b'[1]\n"x"\n{"type": "tool.execution_complete", "data": {"toolCallId": 3}}\n'
        b'{"type": "user.message", "data": 7}\n'
        b'{"type": "assistant.message", "data": {"toolRequests": [5]}}\n\xff\n'
    ),
)


class TestCopilotCliSession(SessionFileSpec):
    """What every recorded client's reader does (gemini_family.py): the asks are the typed
    prompts, the todos the session's task list, the file created then edited, the failure."""

    recording = COPILOT

    def test_a_torn_last_line_is_skipped_and_everything_before_it_kept(self, tmp_path: Path) -> None:
        # As the shared test, with the task list (session.db) beside the cut events.jsonl.
        raw = SESSION.read_bytes()
        path = tmp_path / SESSION.name
        path.write_bytes(raw[: raw.rindex(COPILOT.marker.encode())])
        shutil.copyfile(SESSION.parent / "session.db", tmp_path / "session.db")
        read = copilot_cli.read(path)
        assert list(read.asks) == PROMPTS and read.todos == TODOS and list(read.failures) == [FAILURE]
        assert COPILOT.marker not in read.last_message


def event(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "data": data, "id": os.urandom(4).hex()}


def asked_for(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    request = {"toolCallId": call_id, "name": name, "arguments": arguments}
    return event("assistant.message", content="", toolRequests=[request])


# The real session.


def test_the_fixture_is_copilot_cli_1_0_102_with_every_event_the_reader_uses() -> None:
    """If this fails after the fixture was remade with another Copilot CLI, its session format
    changed: check each shape below against the new file before moving VERSION."""
    events = list(json_lines(SESSION))
    [start] = [e for e in events if e["type"] == "session.start"]
    kinds = {e["type"] for e in events}
    done = [e["data"] for e in events if e["type"] == "tool.execution_complete"]
    calls = [r for e in events if e["type"] == "assistant.message" for r in e["data"]["toolRequests"]]
    shapes = {
        "version": start["data"]["copilotVersion"] == VERSION,
        "event kinds": {"user.message", "assistant.message", "tool.execution_complete"} <= kinds,
        "compaction": "session.compaction_complete" in kinds,
        "tool names": {c["name"] for c in calls} == {"sql", "create", "bash", "edit"},
        "call fields": all({"toolCallId", "name", "arguments"} <= set(c) for c in calls),
        "file edits": sum(bool(d.get("fileEdits")) for d in done) == 2,
        "exit codes": [d["shellExecution"]["exitCode"] for d in done if "shellExecution" in d] == [1, 0],
    }
    assert all(shapes.values()), f"no longer as in {VERSION}: {[k for k, ok in shapes.items() if not ok]}"


def test_the_compact_summary_is_the_compactions_own() -> None:
    summary = copilot_cli.read(SESSION).compact_summary
    assert summary.startswith("<state_snapshot>") and "widget work" in summary


def test_the_session_start_hook_fired_on_the_start_and_on_the_resume() -> None:
    assert [p["source"] for p in COPILOT.hooks("SessionStart")] == ["new", "resume"]
    assert len(COPILOT.hooks("SessionEnd")) == 2  # each `-p` run ends with one


# Hand-made events.


def test_a_failed_call_and_a_non_zero_exit_are_failures_and_a_failed_edit_is_no_change(
    tmp_path: Path,
) -> None:
    path = write_records(
        tmp_path / "events.jsonl",
        asked_for("a", "edit", path="/p/x.py", old_str="a", new_str="b"),
        event("tool.execution_complete", toolCallId="a", success=False, error={"message": "no match"}),
        asked_for("b", "bash", command="make"),
        event(
            "tool.execution_complete",
            toolCallId="b",
            success=True,
            shellExecution={"exitCode": 2},
            result={"content": "cc main.c\nfatal: no widget\n<shellId: 0 completed with exit code 2>"},
        ),
        asked_for("c", "bash", command="sleep 999"),
        event("tool.execution_complete", toolCallId="c", success=False, error={"message": "timed out"}),
    )
    read = copilot_cli.read(path)
    assert not read.files and list(read.failures) == ["make: fatal: no widget", "sleep 999: timed out"]


def test_a_sub_agents_message_is_not_the_last_reply(tmp_path: Path) -> None:
    path = write_records(
        tmp_path / "events.jsonl",
        event("assistant.message", content="The answer."),
        event("assistant.message", content="sub-agent notes", parentToolCallId="t1"),
    )
    assert copilot_cli.read(path).last_message == "The answer."


def test_a_locked_or_broken_task_list_is_skipped(tmp_path: Path) -> None:
    path = write_records(tmp_path / "events.jsonl", event("assistant.message", content="Hi."))
    (tmp_path / "session.db").write_bytes(b"not a database")
    assert copilot_cli.read(path).todos == {}


def test_only_the_newest_tasks_are_kept(tmp_path: Path) -> None:
    path = write_records(tmp_path / "events.jsonl", event("assistant.message", content="Hi."))
    with closing(sqlite3.connect(tmp_path / "session.db")) as db:
        db.execute("CREATE TABLE todos (id TEXT PRIMARY KEY, title TEXT NOT NULL, status TEXT)")
        db.executemany(
            "INSERT INTO todos VALUES (?, ?, ?)", [(str(n), f"task {n}", "done") for n in range(80)]
        )
        db.execute("UPDATE todos SET status = 'blocked' WHERE id = '79'")
        db.commit()
    todos = copilot_cli.read(path).todos
    assert len(todos) == 50 and next(iter(todos)) == "task 30" and todos["task 79"] == "pending"


# Finding the session.


def test_locate_finds_the_newest_session_started_in_the_folder(tmp_path: Path) -> None:
    assert copilot_cli.locate(HOME, CWD) == SESSION
    home = tmp_path / "home"
    shutil.copytree(HOME, home)
    other = home / ".copilot" / "session-state" / "bbbb"
    newer = write_records(other / "events.jsonl", event("user.message", content="new"))
    (other / "workspace.yaml").write_text(f"id: bbbb\ncwd: {CWD}\n")
    os.utime(home / SESSION.relative_to(HOME), (1, 1))
    assert copilot_cli.locate(home, CWD) == newer


def test_locate_refuses_an_unsafe_id() -> None:
    assert copilot_cli.locate(HOME, CWD, "../*") is None
