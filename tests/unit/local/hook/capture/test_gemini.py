"""Reading Gemini CLI's own session file, on one a real Gemini CLI 0.61.0 wrote
(tests/fixtures/transcripts/gemini-0.61.0, made by its record.py), plus hand-made records for
what a scripted run does not reach (a legacy one-document session, a cut file)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessionvault.local.hook.capture import gemini
from sessionvault.local.hook.capture.transcript import json_lines

from .gemini_family import (
    CWD,
    FAILURE,
    PROMPTS,
    TODOS,
    TRANSCRIPTS,
    Recording,
    SessionFileSpec,
    write_records,
)

VERSION = "0.61.0"
FIXTURES = TRANSCRIPTS / f"gemini-{VERSION}"
HOME = FIXTURES / "home"
SESSION_ID = json.loads((FIXTURES / "hooks" / "SessionEnd.jsonl").read_text().splitlines()[0])["session_id"]
SESSION = next((HOME / ".gemini" / "tmp" / "widget" / "chats").glob("session-*.jsonl"))
GEMINI = Recording(
    client="gemini",
    reader=gemini,
    name="Gemini CLI",
    package="@google/gemini-cli",
    version=VERSION,
    session=SESSION,
    session_id=SESSION_ID,
    hook_events=("SessionStart", "BeforeAgent", "AfterAgent", "PreCompress", "SessionEnd"),
    unknown_id=SESSION_ID[:8] + "-0000-0000-0000-000000000000",
    junk=b'[1, 2]\n"text"\n{"id": 5}\n\xff\xfe\n{"type": "user"}\n',
)
MARKER = GEMINI.marker


class TestGeminiCliSessionFile(SessionFileSpec):
    """What Gemini CLI's reader does as Qwen Code's does (gemini_family.py): the asks leave out
    the SessionStart hook's context, the todos are the last write_todos list, the file is
    written then changed with replace."""

    recording = GEMINI


def session_copy(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(HOME, home)
    return next((home / ".gemini" / "tmp" / "widget" / "chats").glob("session-*.jsonl"))


def shell_call(output: str, status: str = "success", command: str = "make test") -> dict[str, Any]:
    response = {"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": output}}}
    call = {"id": "c1", "name": "run_shell_command", "args": {"command": command}, "status": status}
    return {"id": "m1", "type": "gemini", "content": "", "toolCalls": [{**call, "result": [response]}]}


# The real session file.


def test_the_fixture_is_gemini_cli_0_61_jsonl_with_every_record_kind_the_reader_uses() -> None:
    """If this fails after the fixture was remade with another Gemini CLI, its session format
    changed: check each shape below against the new file before moving VERSION."""
    records = list(json_lines(SESSION))
    first, messages = records[0], [r for r in records if "type" in r]
    calls = [c for m in messages for c in m.get("toolCalls", [])]
    shapes = {
        "metadata line (sessionId, projectHash, kind)": {"sessionId", "projectHash", "kind"} <= set(first),
        "message types": {m["type"] for m in messages} == {"user", "gemini"},
        "tool call fields": all({"id", "name", "args", "status", "result"} <= set(c) for c in calls),
        "tool names": {c["name"] for c in calls}
        == {"write_todos", "write_file", "run_shell_command", "replace"},
        "history rewrites ($set.messages)": any("messages" in r.get("$set", {}) for r in records),
        "shell result fields": any("Exit Code: 1" in gemini.tool_output(c) for c in calls),
        "compression summary": any(gemini.SNAPSHOT in json.dumps(r) for r in records),
    }
    assert all(shapes.values()), f"no longer as in {VERSION}: {[k for k, ok in shapes.items() if not ok]}"


def test_the_compact_summary_is_the_state_snapshot_of_the_last_compression() -> None:
    summary = gemini.read(SESSION).compact_summary
    assert summary.startswith("<state_snapshot>") and "widget work" in summary


# Cut, torn and odd input.


def test_a_legacy_one_document_session_is_read_like_the_jsonl_one(tmp_path: Path) -> None:
    records = list(json_lines(SESSION))
    messages = list({r["id"]: r for r in records if "type" in r}.values())  # the last of each id
    path = tmp_path / f"session-2025-01-01T00-00-{SESSION_ID[:8]}.json"
    path.write_text(json.dumps({**records[0], "messages": messages}))
    read = gemini.read(path)
    assert read.session_id == SESSION_ID and list(read.asks) == PROMPTS and read.todos == TODOS
    assert list(read.failures) == [FAILURE] and MARKER in read.last_message


def test_a_legacy_document_above_the_size_limit_is_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session-big.json"
    path.write_text(
        json.dumps({"sessionId": "s", "messages": [{"id": "1", "type": "user", "content": "hi"}]})
    )
    monkeypatch.setattr(gemini, "MAX_DOCUMENT", 10)
    assert gemini.read(path).session_id == "" and not gemini.read(path).asks


def test_a_failed_tool_is_not_a_change_and_a_rejected_todo_list_not_the_list(tmp_path: Path) -> None:
    calls = [
        {"id": "a", "name": "write_file", "args": {"file_path": "/p/x.py"}, "status": "error", "result": []},
        {"id": "b", "name": "write_todos", "args": {"todos": [{"description": "t"}]}, "status": "error"},
    ]
    path = write_records(
        tmp_path / "s.jsonl", {"id": "m", "type": "gemini", "content": "", "toolCalls": calls}
    )
    read = gemini.read(path)
    assert not read.files and not read.todos


def test_a_tool_call_written_again_when_it_finishes_counts_once(tmp_path: Path) -> None:
    call = shell_call("Output: boom: no widget\nExit Code: 2")
    path = write_records(tmp_path / "s.jsonl", call, call, call)
    assert list(gemini.read(path).failures) == ["make test: boom: no widget"]


@pytest.mark.parametrize(
    ("output", "status", "line"),
    [
        (
            "Output: a\nTraceback (most recent call last):\nValueError: bad widget\nExit Code: 1",
            "success",
            "ValueError: bad widget",
        ),
        ("Output: compiling\nlinking\nExit Code: 3", "success", "linking"),
        ("Output: (empty)\nExit Code: 127", "success", "exit code 127"),
        (
            "Output: (empty)\nError: spawn bash ENOENT\nExit Code: (none)",
            "success",
            "spawn bash ENOENT",
        ),
        ("Command is not allowed: rm -rf /", "error", "Command is not allowed: rm -rf /"),
    ],
)
def test_the_error_line_is_the_first_that_reads_like_an_error_else_the_last(
    tmp_path: Path, output: str, status: str, line: str
) -> None:
    path = write_records(tmp_path / "s.jsonl", shell_call(output, status))
    assert list(gemini.read(path).failures) == [f"make test: {line}"]


def test_a_shell_command_that_succeeded_or_was_cancelled_is_no_failure(tmp_path: Path) -> None:
    ok = shell_call("Output: error: this is only the word\nProcess Group PGID: 9")
    cancelled = {**shell_call("Command was cancelled by user"), "id": "m2"}
    cancelled["toolCalls"] = [{**cancelled["toolCalls"][0], "id": "c2", "status": "cancelled"}]
    assert not gemini.read(write_records(tmp_path / "s.jsonl", ok, cancelled)).failures


def test_a_failure_is_cut_to_300_characters(tmp_path: Path) -> None:
    path = write_records(tmp_path / "s.jsonl", shell_call("Output: error " + "x" * 999 + "\nExit Code: 1"))
    assert len(gemini.read(path).failures[0]) == 300


def test_a_file_outside_the_project_keeps_its_absolute_path(tmp_path: Path) -> None:
    calls = [
        {"id": "a", "name": "write_file", "args": {"file_path": "/p/src/a.py"}, "status": "success"},
        {"id": "b", "name": "replace", "args": {"file_path": "/etc/hosts"}, "status": "success"},
        {"id": "c", "name": "replace", "args": {"file_path": "/p2/b.py"}, "status": "success"},
    ]
    context = {
        "id": "0",
        "type": "user",
        "content": [{"text": "<session_context>\n- **Workspace Directories:**\n  - /p\n"}],
    }
    path = write_records(tmp_path / "s.jsonl", context, {"id": "m", "type": "gemini", "toolCalls": calls})
    read = gemini.read(path)
    assert read.cwd == "/p" and list(read.files) == ["src/a.py", "/etc/hosts", "/p2/b.py"]


def test_slash_commands_and_client_context_are_not_asks(tmp_path: Path) -> None:
    texts = ["/compress", "?", "<hook_context>only context</hook_context>", "  ", "real question"]
    path = write_records(tmp_path / "s.jsonl", *({"id": t, "type": "user", "content": t} for t in texts))
    assert list(gemini.read(path).asks) == ["real question"]


# Finding the file.


def test_locate_finds_the_newest_session_of_the_project_through_projects_json() -> None:
    assert gemini.locate(HOME, CWD) == SESSION


def test_locate_prefers_the_most_recently_written_session(tmp_path: Path) -> None:
    path = session_copy(tmp_path)
    newer = path.with_name("session-2026-12-02T00-00-abcdef12.jsonl")
    write_records(newer, {"sessionId": "abcdef12-rest", "projectHash": "h"})
    os.utime(path, (1, 1))
    assert gemini.locate(tmp_path / "home", CWD) == newer
    assert gemini.locate(tmp_path / "home", CWD, "abcdef12-rest") == newer


def test_locate_finds_a_project_by_its_project_root_marker_or_its_old_hash_folder(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    marked = write_records(home / ".gemini/tmp/proj-1/chats/session-2026-01-01T00-00-aaaaaaaa.jsonl", {})
    (home / ".gemini/tmp/proj-1/.project_root").write_text(str(project))
    assert gemini.locate(home, project) == marked
    hashed = (
        home
        / ".gemini/tmp"
        / hashlib.sha256(str(project).encode()).hexdigest()
        / "chats/session-2025-01-01T00-00-bbbbbbbb.json"
    )
    write_records(hashed, {})
    os.utime(marked, (1, 1))
    assert gemini.locate(home, project) == hashed


def test_locate_ignores_subagent_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(HOME, home)
    chats = home / ".gemini/tmp/widget/chats"
    write_records(chats / SESSION_ID / "agent-1.jsonl", {"sessionId": "agent-1"})
    assert gemini.locate(home, CWD) == chats / SESSION.name
