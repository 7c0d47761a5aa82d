"""Reading Codex CLI's own session file (its rollout), on one a real Codex CLI 0.171.0 wrote
(tests/fixtures/transcripts/codex-0.171.0, made by its record.py), plus hand-made entries for
what a scripted run does not reach (older output shapes, refused or failed calls, a cut file)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessionvault.local.hook.capture import codex
from sessionvault.local.hook.capture.transcript import json_lines

from .recorded_run import COMMAND, CWD, PROMPTS, TODOS

VERSION = "0.171.0"
FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "transcripts" / f"codex-{VERSION}"
MAKEFILE = Path(__file__).resolve().parents[5] / "Makefile"
ROLLOUT = FIXTURES / "rollout.jsonl"
HOOKS = [json.loads(line) for line in (FIXTURES / "hooks.jsonl").read_text().splitlines() if line.strip()]
SESSION_ID = HOOKS[0]["session_id"]
RECORDED_AT = Path(HOOKS[0]["transcript_path"])  # where Codex wrote it, under HOME /home/user
SLOW = (
    "sleep 2; echo 'sv-slow: checking the schema'; "
    "python3 -c \"raise SystemExit('sv-slow-boom: widget schema invalid')\""
)
FAILURES = [f"{COMMAND}: sv-boom: widget config missing", f"{SLOW}: sv-slow-boom: widget schema invalid"]
MARKER = "sv-marker-codex-run-2"
SUMMARY = "Scripted summary: the steps so far ran; continue with the next one."


def entries() -> list[dict[str, Any]]:
    return list(json_lines(ROLLOUT))


def items(kind: str) -> list[dict[str, Any]]:
    return [e["payload"] for e in entries() if e["type"] == "response_item" and e["payload"]["type"] == kind]


def installed(home: Path, source: Path = ROLLOUT) -> Path:
    """The fixture where Codex keeps it, under a `home`."""
    path = home / RECORDED_AT.relative_to("/home/user")
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, path)
    return path


def write_entries(path: Path, *payloads: dict[str, Any], cwd: str = "/p") -> Path:
    """A rollout: a session_meta line, then each payload as a response_item."""
    meta = {"type": "session_meta", "payload": {"id": "s-1", "cwd": cwd, "cli_version": VERSION}}
    lines = [meta, *({"type": "response_item", "payload": p} for p in payloads)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def function_call(name: str, arguments: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id}


def output(text: Any, call_id: str = "c1", kind: str = "function_call_output") -> dict[str, Any]:
    return {"type": kind, "call_id": call_id, "output": text}


def exited(code: int, printed: str) -> str:
    return f"Chunk ID: ab12\nWall time: 0.1 seconds\nProcess exited with code {code}\nOutput:\n{printed}"


# The real session file.


def test_the_fixture_is_codex_0_171_with_every_entry_kind_the_reader_uses() -> None:
    """If this fails after the fixture was remade with another Codex CLI, its rollout format
    changed: check each shape below against the new file before moving VERSION."""
    pinned = re.search(r"@openai/codex@(\S+)", MAKEFILE.read_text())
    assert pinned and pinned.group(1) == VERSION, (
        f"the Makefile pins Codex CLI {pinned and pinned.group(1)}, this fixture is {VERSION}: "
        f"re-record it with tests/fixtures/transcripts/codex-{VERSION}/record.py and recheck the reader"
    )
    first = entries()[0]
    recorded = first["payload"].get("cli_version")
    assert recorded == VERSION, (
        f"the fixture was written by Codex CLI {recorded}, not {VERSION}: re-record it"
    )
    calls = items("function_call") + items("custom_tool_call")
    outputs = [str(o["output"]) for o in items("function_call_output") + items("custom_tool_call_output")]
    users = items("message")
    shapes = {
        "session_meta first (id, cwd)": first["type"] == "session_meta"
        and {"id", "cwd"} <= set(first["payload"]),
        "user parts labelled user.text": any(
            m["role"] == "user"
            and m["internal_chat_message_metadata_passthrough"]["content_item_kinds"] == ["user.text"]
            for m in users
        ),
        "assistant output_text": any(
            m["role"] == "assistant" and m["content"][0]["type"] == "output_text" for m in users
        ),
        "tool names": {c["name"] for c in calls}
        == {"update_plan", "apply_patch", "exec_command", "write_stdin"},
        "update_plan arguments.plan[step, status]": all(
            {"step", "status"} <= set(s)
            for c in calls
            if c["name"] == "update_plan"
            for s in json.loads(c["arguments"])["plan"]
        ),
        "apply_patch freeform input": all(
            c["type"] == "custom_tool_call" and c["input"].startswith("*** Begin Patch")
            for c in calls
            if c["name"] == "apply_patch"
        ),
        "exec_command arguments.cmd": all(
            "cmd" in json.loads(c["arguments"]) for c in calls if c["name"] == "exec_command"
        ),
        "exit code header": any("\nProcess exited with code 1\n" in o for o in outputs),
        "running session header": any("\nProcess running with session ID " in o for o in outputs),
        "apply_patch exit code": any(o.startswith("Exit code: 0\n") for o in outputs),
        "compacted message": any(
            e["type"] == "compacted" and e["payload"]["message"].startswith("Another language model started")
            for e in entries()
        ),
    }
    assert all(shapes.values()), f"no longer as in {VERSION}: {[k for k, ok in shapes.items() if not ok]}"


def test_the_session_id_and_project_folder_are_the_ones_the_hooks_reported() -> None:
    read = codex.read(ROLLOUT)
    assert read.client == "codex"
    assert read.session_id == SESSION_ID and read.cwd == str(CWD)
    assert {(h["session_id"], h["cwd"]) for h in HOOKS} == {(SESSION_ID, str(CWD))}


def test_the_asks_are_the_prompts_without_agents_md_the_environment_or_hook_context() -> None:
    text = ROLLOUT.read_text()
    assert "# AGENTS.md instructions for" in text and "Resume here: sv-handoff" in text
    assert list(codex.read(ROLLOUT).asks) == PROMPTS


def test_the_todos_are_the_last_update_plan_list_with_its_statuses() -> None:
    assert codex.read(ROLLOUT).todos == TODOS


def test_a_file_added_then_updated_by_apply_patch_is_listed_once_relative_to_the_project() -> None:
    assert list(codex.read(ROLLOUT).files) == ["notes/plan.md"]


def test_a_command_that_exited_non_zero_is_a_failure_with_its_error_line() -> None:
    assert list(codex.read(ROLLOUT).failures) == FAILURES  # `ls notes` exited 0: not one


def test_a_command_still_running_when_its_call_returned_fails_where_write_stdin_saw_it_exit(
    tmp_path: Path,
) -> None:
    lines = ROLLOUT.read_text().splitlines(keepends=True)
    polled = next(i for i, line in enumerate(lines) if '"name":"write_stdin"' in line)
    cut = tmp_path / "rollout.jsonl"
    cut.write_text("".join(lines[:polled]))  # the slow command was left running, not yet seen to exit
    assert list(codex.read(cut).failures) == FAILURES[:1]


def test_the_last_message_is_the_final_answer_of_the_last_turn() -> None:
    assert MARKER in codex.read(ROLLOUT).last_message


def test_the_compact_summary_is_the_summary_without_codexs_hand_over_preamble() -> None:
    assert codex.read(ROLLOUT).compact_summary == SUMMARY


def test_the_compactions_own_reply_is_not_taken_for_the_last_message(tmp_path: Path) -> None:
    lines = ROLLOUT.read_text().splitlines(keepends=True)
    compacted = next(
        i for i, line in enumerate(lines) if line.startswith('{"timestamp"') and '"type":"compacted"' in line
    )
    cut = tmp_path / "rollout.jsonl"
    cut.write_text("".join(lines[: compacted + 1]))
    read = codex.read(cut)
    assert read.compact_summary == SUMMARY and read.last_message == ""  # nothing said to the user yet


def test_every_hook_payload_names_the_session_file_where_codex_keeps_it() -> None:
    assert {h["transcript_path"] for h in HOOKS} == {str(RECORDED_AT)}
    assert re.fullmatch(
        rf"/home/user/\.codex/sessions/\d{{4}}/\d\d/\d\d/rollout-[\dT-]+-{SESSION_ID}\.jsonl",
        str(RECORDED_AT),
    )
    stop = json.loads((FIXTURES / "hook-Stop.json").read_text())
    assert stop["last_assistant_message"].endswith("sv-marker-codex-run-1")


# Cut, torn and odd input.


def test_a_torn_last_line_is_skipped_and_everything_before_it_kept(tmp_path: Path) -> None:
    lines = ROLLOUT.read_text().splitlines(keepends=True)
    answer = next(i for i, line in enumerate(lines) if '"role":"assistant"' in line and MARKER in line)
    path = tmp_path / "rollout.jsonl"
    path.write_text(
        "".join(lines[:answer]) + lines[answer][: lines[answer].index(MARKER)]
    )  # killed mid-write
    read = codex.read(path)
    assert list(read.asks) == PROMPTS and read.todos == TODOS and list(read.failures) == FAILURES
    assert MARKER not in read.last_message and "sv-marker-codex-run-1" in read.last_message


def test_a_file_cut_at_any_point_reads_without_raising(tmp_path: Path) -> None:
    raw = ROLLOUT.read_bytes()
    path = tmp_path / "rollout-cut.jsonl"
    for end in range(0, len(raw), max(1, len(raw) // 97)):
        path.write_bytes(raw[:end])
        codex.read(path)


def test_lines_that_are_not_entries_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "rollout-odd.jsonl"
    odd = (
        b'[1]\n"text"\n{"type": "response_item"}\n{"type": "response_item", "payload": {"type": "message"}}\n'
    )
    path.write_bytes(odd + b"\xff\xfe\n" + ROLLOUT.read_bytes())
    assert list(codex.read(path).asks) == PROMPTS


# Shapes a scripted 0.171.0 run does not write.


def test_unlabelled_injected_user_parts_are_not_asks(tmp_path: Path) -> None:
    parts = ["<environment_context>\n<cwd>/p</cwd>\n</environment_context>", "<user_instructions>x", "fix it"]
    message = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": t} for t in parts],
    }
    assert list(codex.read(write_entries(tmp_path / "r.jsonl", message)).asks) == ["fix it"]


def test_a_refused_plan_is_not_the_plan_and_a_failed_patch_not_a_change(tmp_path: Path) -> None:
    path = write_entries(
        tmp_path / "r.jsonl",
        function_call("update_plan", {"plan": [{"step": "a", "status": "pending"}]}),
        output("update_plan is a TODO/checklist tool and is not allowed in Plan mode"),
        {
            "type": "custom_tool_call",
            "name": "apply_patch",
            "call_id": "p",
            "input": "*** Update File: x.py\n",
        },
        output(
            "Exit code: 1\nWall time: 0 seconds\nOutput:\nFailed to find context",
            "p",
            "custom_tool_call_output",
        ),
    )
    read = codex.read(path)
    assert not read.todos and not read.files and not read.failures


def test_a_json_apply_patch_and_a_patch_through_the_shell_are_changes(tmp_path: Path) -> None:
    envelope = "*** Begin Patch\n*** Update File: /p/src/a.py\n*** Move to: /p/src/b.py\n*** End Patch\n"
    path = write_entries(
        tmp_path / "r.jsonl",
        function_call(
            "apply_patch", {"input": "*** Begin Patch\n*** Add File: README.md\n+hi\n*** End Patch\n"}
        ),
        output("Exit code: 0\nOutput:\nSuccess."),
        function_call("exec_command", {"cmd": f"apply_patch <<'EOF'\n{envelope}EOF"}, "c2"),
        output(exited(0, "Success."), "c2"),
        function_call("exec_command", {"cmd": "cat /etc/x"}, "c3"),
        output(exited(0, "x"), "c3"),
    )
    assert list(codex.read(path).files) == ["README.md", "src/a.py", "src/b.py"]


@pytest.mark.parametrize(
    ("call", "text", "failure"),
    [
        (  # the older `shell` tool: an argv, a JSON output with metadata.exit_code
            function_call("shell", {"command": ["bash", "-lc", "make test"]}),
            json.dumps({"output": "ok 1\nmake: *** [test] Error 2\n", "metadata": {"exit_code": 2}}),
            "make test: make: *** [test] Error 2",
        ),
        (
            function_call("shell_command", {"command": "pytest -q"}),
            "Exit code: 1\nWall time: 2 seconds\nOutput:\n..F\nE   AssertionError: widget\n",
            "pytest -q: E   AssertionError: widget",
        ),
        (  # what the command printed is not Codex's header
            function_call("exec_command", {"cmd": "./check"}),
            exited(3, "Exit code: 0\nProcess exited with code 0\ndone\n"),
            "./check: done",
        ),
        (  # no line reads like an error: the last one printed
            function_call("exec_command", {"cmd": "grep -q widget a.txt b.txt"}),
            exited(2, "a.txt\nb.txt\n"),
            "grep -q widget a.txt b.txt: b.txt",
        ),
        (
            {
                "type": "local_shell_call",
                "call_id": "c1",
                "action": {"type": "exec", "command": ["ls", "/x"]},
            },
            exited(2, "ls: cannot access '/x': No such file or directory"),
            "ls /x: ls: cannot access '/x': No such file or directory",
        ),
    ],
)
def test_each_shell_tools_non_zero_exit_is_a_failure(
    tmp_path: Path, call: dict[str, Any], text: str, failure: str
) -> None:
    path = write_entries(tmp_path / "r.jsonl", call, output(text))
    assert list(codex.read(path).failures) == [failure]


def test_a_failure_entry_is_at_most_300_characters_with_the_command_shortened(tmp_path: Path) -> None:
    long = "python3 -c " + "x" * 400
    path = write_entries(
        tmp_path / "r.jsonl",
        function_call("exec_command", {"cmd": long}),
        output(exited(1, "Error: " + "y" * 400)),
    )
    [failure] = codex.read(path).failures
    assert (
        len(failure) <= codex.MAX_FAILURE
        and failure.startswith("python3 -c xxx")
        and "…: Error: yyy" in failure
    )


def test_an_output_without_its_call_and_a_call_without_its_output_count_for_nothing(tmp_path: Path) -> None:
    path = write_entries(
        tmp_path / "r.jsonl",
        output(exited(1, "boom"), "orphan"),
        function_call("exec_command", {"cmd": "make"}, "never-answered"),
        function_call("write_stdin", {"session_id": 99, "chars": ""}, "w"),
        output(exited(1, "boom"), "w"),  # a session this file never saw start
    )
    read = codex.read(path)
    assert not read.failures and not read.files
