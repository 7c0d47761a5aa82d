"""A Transcript made into save_session arguments (capture/checkpoint.py)."""

from __future__ import annotations

from sessionvault.core.records import MAX_ITEMS, MAX_TEXT, SaveArgs, parse
from sessionvault.local.hook.capture.checkpoint import build
from sessionvault.local.hook.capture.transcript import Transcript


def transcript(**fields: object) -> Transcript:
    t = Transcript(client="codex", session_id="019a-b/../c")
    for name, value in fields.items():
        setattr(t, name, value)
    return t


def test_a_bare_request_with_no_reply_or_work_is_nothing_to_hand_over() -> None:
    t = transcript()
    t.asks.append("hi")
    assert build(t, repo="github.com/a/b", branch=None, commit=None) is None


def test_the_fields_follow_the_documented_mapping() -> None:
    t = transcript(last_message="done: see notes", compact_summary="earlier: set up the repo")
    t.asks.extend(["first ask", "latest ask"])
    t.set_todo("write plan", "completed")
    t.set_todo("check config", "in_progress")
    t.touch("notes/plan.md")
    t.failures.append("make test: error: 2 failed")
    args = build(t, repo="github.com/a/b", branch="main", commit="0123456789abcdef")
    assert args is not None
    assert args["name"] == "auto/codex/019a-b-..-c"  # the id made safe for a name
    assert args["summary"] == (
        "Asked: latest ask\n\nLast reply: done: see notes\n\nCompaction summary: earlier: set up the repo"
    )
    assert args["plan"] == ["[done] write plan", "[doing] check config"]
    assert args["todos"] == ["check config (in progress)"]
    assert (args["files"], args["errors"], args["tried"]) == (
        ["notes/plan.md"],
        ["make test: error: 2 failed"],
        ["asked: first ask"],
    )
    assert (args["branch"], args["commit"], args["client"]) == ("main", "0123456789abcdef", "codex")
    parse(SaveArgs, args)  # what the server takes


def test_everything_stays_within_the_records_caps() -> None:
    t = transcript(last_message="x" * (3 * MAX_TEXT))
    for i in range(MAX_ITEMS + 20):
        t.touch(f"f{i}")
    args = build(t, repo="r", branch=None, commit=None)
    assert args is not None and len(args["summary"]) <= MAX_TEXT
    parse(SaveArgs, args)
