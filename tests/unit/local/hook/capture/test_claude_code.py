"""Reading Claude Code's own transcript, on transcripts a real Claude Code 2.1.332 wrote
(tests/fixtures/transcripts/claude-code-2.1.332, made by its make_fixture.py), plus a few
hand-written lines for the cases a scripted run does not reach."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessionvault.local.hook.capture import claude_code
from sessionvault.local.hook.capture.transcript import json_lines

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "transcripts" / "claude-code-2.1.332"
VERSION = "2.1.332"
PROMPT = "Plan the widget: write notes/plan.md and check the widget config."
MARKER = "sv-marker-7f3a"
COMMAND = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\""
FAILURE = f"{COMMAND}: sv-boom: widget config missing"
TASK = "Write the widget plan"


def fixture(name: str) -> Path:
    return FIXTURES / name


def hook(name: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(fixture(name).read_text())
    return payload


def write_lines(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def user(content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": content}, "cwd": "/p", **extra}


def assistant(*blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": list(blocks)}, **extra}


def call(tool_id: str, name: str, **given: Any) -> dict[str, Any]:
    return assistant({"type": "tool_use", "id": tool_id, "name": name, "input": given})


def result(tool_id: str, content: Any, is_error: bool = False, extra: Any = None) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}
    return user([block], toolUseResult=extra)


def is_bash_call(entry: dict[str, Any]) -> bool:
    content = entry.get("message", {}).get("content") if entry.get("type") == "assistant" else None
    return isinstance(content, list) and any(b.get("name") == "Bash" for b in content)


# The real transcripts.


def test_the_fixture_is_claude_code_2_1_332_and_the_reader_finds_every_kind_of_entry_in_it() -> None:
    """If this fails after the fixture was remade with another Claude Code, its transcript
    format changed: check each field below against the new transcript before bumping VERSION."""
    versions = {e["version"] for e in json_lines(fixture("compacted.jsonl")) if "version" in e}
    assert versions == {VERSION}, f"transcript written by Claude Code {versions}, the reader knows {VERSION}"
    read = claude_code.read(fixture("compacted.jsonl"))
    found = {
        "ask": list(read.asks) == [PROMPT, "What failed?"],
        "task (TaskCreate + TaskUpdate)": read.todos == {TASK: "in_progress"},
        "file (Write)": list(read.files) == ["notes/plan.md"],
        "failure (Bash + is_error result)": list(read.failures) == [FAILURE],
        "last assistant text": MARKER in read.last_message,
        "compaction summary (isCompactSummary)": read.compact_summary.startswith(
            "The user asked for a widget plan"
        ),
        "session id and cwd": bool(read.session_id) and read.cwd == "/home/user/project",
    }
    assert all(found.values()), (
        f"not found in the {VERSION} transcript: {[k for k, v in found.items() if not v]}"
    )


def test_the_ask_is_the_users_prompt_alone() -> None:
    assert list(claude_code.read(fixture("session.jsonl")).asks) == [PROMPT]


def test_a_task_made_with_task_create_and_started_with_task_update_is_in_progress() -> None:
    assert claude_code.read(fixture("session.jsonl")).todos == {TASK: "in_progress"}


def test_a_todo_write_list_is_the_task_list_when_task_tools_are_off() -> None:
    assert claude_code.read(fixture("todowrite.jsonl")).todos == {TASK: "in_progress"}


def test_the_written_file_is_named_relative_to_the_project() -> None:
    assert list(claude_code.read(fixture("session.jsonl")).files) == ["notes/plan.md"]


def test_the_failing_command_is_kept_with_its_error_line_not_the_exit_code() -> None:
    assert list(claude_code.read(fixture("session.jsonl")).failures) == [FAILURE]


def test_the_last_message_is_the_final_assistant_text_with_the_marker() -> None:
    read = claude_code.read(fixture("session.jsonl"))
    assert read.last_message == hook("hook-Stop.json")["last_assistant_message"]
    assert MARKER in read.last_message


def test_the_session_id_and_cwd_are_those_the_hooks_are_given() -> None:
    read = claude_code.read(fixture("session.jsonl"))
    stop = hook("hook-Stop.json")
    assert (read.session_id, read.cwd) == (stop["session_id"], stop["cwd"])


def test_the_compaction_summary_is_the_summary_text_without_claude_codes_wrapping() -> None:
    summary = claude_code.read(fixture("compacted.jsonl")).compact_summary
    assert summary.startswith("The user asked for a widget plan.") and summary.endswith(
        "add the widget config."
    )


def test_the_compact_command_and_its_output_are_not_asks() -> None:
    asks = claude_code.read(fixture("compacted.jsonl")).asks
    assert not any("compact" in ask.lower() for ask in asks), asks


def test_a_plain_session_has_no_compaction_summary() -> None:
    assert claude_code.read(fixture("session.jsonl")).compact_summary == ""


def test_a_torn_last_line_is_skipped_and_the_rest_is_read(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_text(fixture("session.jsonl").read_text() + '{"type": "user", "message": {"role": "us')
    read = claude_code.read(torn)
    assert list(read.asks) == [PROMPT] and MARKER in read.last_message


def test_a_transcript_cut_mid_tool_call_keeps_what_came_before(tmp_path: Path) -> None:
    lines = fixture("session.jsonl").read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if is_bash_call(json.loads(line)))
    path = tmp_path / "cut.jsonl"
    path.write_text("".join(lines[: cut + 1]))
    read = claude_code.read(path)
    assert list(read.files) == ["notes/plan.md"] and not read.failures  # the call has no result yet


# Where the transcript is.


def test_the_hooks_transcript_path_is_where_locate_looks(tmp_path: Path) -> None:
    stop = hook("hook-Stop.json")
    relative = Path(stop["transcript_path"]).relative_to("/home/user")
    copy = tmp_path / relative
    copy.parent.mkdir(parents=True)
    shutil.copy(fixture("session.jsonl"), copy)
    assert claude_code.locate(tmp_path, Path(stop["cwd"]), stop["session_id"]) == copy


def test_locate_without_a_session_id_finds_the_newest_transcript_of_that_folder(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "projects" / "-srv-my-app-v2"
    folder.mkdir(parents=True)
    old, new = folder / "a.jsonl", folder / "b.jsonl"
    old.write_text("{}\n")
    new.write_text("{}\n")
    os.utime(old, (1_000, 1_000))
    assert claude_code.locate(tmp_path, Path("/srv/my_app.v2")) == new
    assert claude_code.locate(tmp_path, Path("/srv/my_app.v2"), "a") == old


def test_locate_finds_nothing_for_an_unknown_session_or_folder(tmp_path: Path) -> None:
    assert claude_code.locate(tmp_path, Path("/nowhere")) is None
    (tmp_path / ".claude" / "projects" / "-p").mkdir(parents=True)
    assert claude_code.locate(tmp_path, Path("/p"), "missing") is None


def test_locate_matches_a_long_folder_name_by_its_first_200_characters(tmp_path: Path) -> None:
    cwd = Path("/" + "/".join(["segment"] * 40))
    name = "-" + "-".join(["segment"] * 40)
    folder = tmp_path / ".claude" / "projects" / f"{name[:200]}-1x2y3z"
    folder.mkdir(parents=True)
    (folder / "s.jsonl").write_text("{}\n")
    assert claude_code.locate(tmp_path, cwd, "s") == folder / "s.jsonl"


def test_locate_uses_the_config_folder_when_one_is_given(tmp_path: Path) -> None:
    folder = tmp_path / "cfg" / "projects" / "-p"
    folder.mkdir(parents=True)
    (folder / "s.jsonl").write_text("{}\n")
    assert claude_code.locate(tmp_path, Path("/p"), "s", config=tmp_path / "cfg") == folder / "s.jsonl"


# Cases a scripted run does not reach, on hand-written lines of the same shape.


def test_a_failed_edit_is_not_a_touched_file_and_a_file_outside_the_project_stays_absolute(
    tmp_path: Path,
) -> None:
    path = write_lines(
        tmp_path / "t.jsonl",
        user("go"),
        call("t1", "Edit", file_path="/p/src/a.py", old_string="x", new_string="y"),
        result("t1", "<tool_use_error>String to replace not found in file.</tool_use_error>", is_error=True),
        call("t2", "MultiEdit", file_path="/elsewhere/b.py", edits=[]),
        result("t2", "ok"),
        call("t3", "NotebookEdit", notebook_path="/p/nb.ipynb", new_source=""),
        result("t3", "ok"),
    )
    assert list(claude_code.read(path).files) == ["/elsewhere/b.py", "nb.ipynb"]


def test_the_error_line_is_the_one_that_reads_like_an_error(tmp_path: Path) -> None:
    traceback = (
        'Exit code 1\nTraceback (most recent call last):\n  File "x.py", line 1\nValueError: bad widget'
    )
    path = write_lines(
        tmp_path / "t.jsonl",
        call("t1", "Bash", command="python3 x.py"),
        result("t1", [{"type": "text", "text": traceback}], is_error=True),
        call("t2", "Bash", command="true"),
        result("t2", "fine"),
    )
    assert list(claude_code.read(path).failures) == ["python3 x.py: ValueError: bad widget"]


def test_a_failure_line_is_at_most_300_characters(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "t.jsonl",
        call("t1", "Bash", command="make " + "target " * 100),
        result("t1", "error: " + "x" * 1000, is_error=True),
    )
    (line,) = claude_code.read(path).failures
    assert len(line) <= claude_code.MAX_FAILURE and line.startswith("make target")


def test_a_deleted_task_leaves_the_list_and_a_renamed_one_keeps_its_place(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "t.jsonl",
        call("t1", "TaskCreate", subject="one", description=""),
        result("t1", "Task #1 created successfully: one", extra={"task": {"id": "1", "subject": "one"}}),
        call("t2", "TaskCreate", subject="two", description=""),
        result("t2", "Task #2 created successfully: two"),  # no toolUseResult: the reply's id
        call("t3", "TaskUpdate", taskId="1", status="deleted"),
        result("t3", "Updated task #1 deleted"),
        call("t4", "TaskUpdate", taskId="2", subject="two, renamed", status="completed"),
        result("t4", "Updated task #2"),
    )
    assert claude_code.read(path).todos == {"two, renamed": "completed"}


def test_meta_interrupt_and_shell_mode_lines_are_not_asks_but_text_block_prompts_are(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "t.jsonl",
        user("<local-command-caveat>Caveat</local-command-caveat>", isMeta=True),
        user("<bash-input>ls</bash-input>"),
        user([{"type": "text", "text": "[Request interrupted by user]"}]),
        user([{"type": "text", "text": "fix the build"}, {"type": "image", "source": {}}]),
    )
    assert list(claude_code.read(path).asks) == ["fix the build"]


def test_an_api_error_is_not_the_last_message(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "t.jsonl",
        assistant({"type": "text", "text": "Half done."}),
        assistant({"type": "text", "text": "API Error: 529 overloaded"}, isApiErrorMessage=True),
    )
    assert claude_code.read(path).last_message == "Half done."


@pytest.mark.parametrize("line", ["[]", '"text"', "{not json", '{"type": "user", "message": "flat"}'])
def test_a_line_of_an_unknown_shape_is_skipped(tmp_path: Path, line: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(line + "\n" + json.dumps(user("after")) + "\n")
    assert list(claude_code.read(path).asks) == ["after"]
