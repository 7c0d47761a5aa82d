"""A session as text (`sessions show`), the diff of two versions (`sessions diff`), the Markdown
page (`export --format markdown`) and its file name; stored control characters never reach
the terminal."""

from __future__ import annotations

from typing import Any

from sessionvault.local.data import readable as diff
from sessionvault.local.data.export_files import markdown_file

RECORD: dict[str, Any] = {
    "summary": "Moved login to JWT.\nRefresh tokens rotate.",
    "plan": ["read auth.py", "write the test"],
    "decisions": [{"decision": "JWT", "reason": "stateless servers"}, {"decision": "no redis", "reason": ""}],
    "todos": ["rotate keys"],
    "files": ["auth.py"],
    "errors": ["KeyError: 'exp'"],
    "tried": ["sessions in redis: too slow"],
    "repo": "github.com/acme/app",
    "client": "codex",
    "branch": "main",
    "commit": "abc123",
}


def test_a_record_reads_as_text_in_a_fixed_order() -> None:
    text = "\n".join(
        diff.record_lines(
            RECORD, {"state": "accepted", "version": 2, "accepted_by": "gemini", "accepted_at": "T"}
        )
    )
    assert text == "\n".join(
        [
            "Summary:",
            "  Moved login to JWT.",
            "  Refresh tokens rotate.",
            "",
            "Plan:",
            "  1. read auth.py",
            "  2. write the test",
            "",
            "Decisions:",
            "  - JWT",
            "    because: stateless servers",
            "  - no redis",
            "",
            "To do:",
            "  - rotate keys",
            "",
            "Files:",
            "  - auth.py",
            "",
            "Errors:",
            "  - KeyError: 'exp'",
            "",
            "Tried:",
            "  - sessions in redis: too slow",
            "",
            "Repo:     github.com/acme/app",
            "Branch:   main",
            "Commit:   abc123",
            "Client:   codex",
            "Handoff:  accepted by gemini at T (offered)",
        ]
    )


def test_empty_parts_are_left_out() -> None:
    assert diff.record_lines({"summary": "only this"}) == ["Summary:", "  only this"]


def test_handoff_states_in_words() -> None:
    assert diff.handoff_text(None) == ""
    assert diff.handoff_text({"state": "open", "version": 1, "to_client": "qwen", "expires_at": "E"}) == (
        "offered to qwen, not accepted yet, until E"
    )
    assert diff.handoff_text({"state": "expired", "version": 1, "expired_at": "E"}) == "offered, expired at E"
    assert diff.handoff_text({"state": "superseded", "version": 1}) == "offered, superseded by a newer offer"
    assert diff.handoff_text({"state": "accepted", "version": 1, "accepted_by": ""}).startswith(
        "accepted by an unnamed client"
    )


def test_control_characters_are_escaped_but_newlines_and_tabs_kept() -> None:
    assert diff.clean("a\x1b[2Jb\x07\u202ec\n\td") == "a\\x1b[2Jb\\x07\\u202ec\n\td"
    assert diff.one_line("a\nb\x1b  c", 5) == "a b\\…"
    assert diff.one_line("short", 10) == "short"
    shown = diff.session_text(
        {"name": "n\x1b]52;c;x\x07", "version": 1, "latest_version": 1, "saved_at": "S", "summary": "\x1bx"}
    )
    assert "\x1b" not in shown and "\x07" not in shown


def test_the_diff_is_of_the_text_and_labels_the_versions() -> None:
    old = {"version": 1, "saved_at": "T1", "record": RECORD}
    new = {
        "version": 2,
        "saved_at": "T2",
        "record": {**RECORD, "todos": [], "plan": [*RECORD["plan"], "ship"]},
    }
    lines = diff.unified("plan", old, new)
    assert lines[:2] == ["--- plan v1 (T1)", "+++ plan v2 (T2)"]
    assert "+  3. ship" in lines and "-  - rotate keys" in lines and "-To do:" in lines
    assert diff.unified("plan", old, old) == []
    coloured = list(diff.coloured(lines))
    assert coloured[0].startswith("\x1b[1m---") and "\x1b[32m+  3. ship\x1b[0m" in coloured


def test_the_session_heading_says_which_version() -> None:
    shown = diff.session_text(
        {"name": "plan", "version": 2, "latest_version": 3, "saved_at": "S", "versions": [3, 2, 1], **RECORD}
    )
    assert shown.startswith(
        "plan\nversion 2 (the latest is 3), saved S; versions kept: 3, 2, 1\n\nSummary:\n"
    )


def test_a_markdown_page_has_every_version_newest_first() -> None:
    page = diff.markdown(
        {
            "name": "auto/codex/x*y",
            "repo": "github.com/acme/app",
            "versions": [
                {"version": 1, "saved_at": "T1", "record": {"summary": "first"}},
                {
                    "version": 2,
                    "saved_at": "T2",
                    "record": RECORD,
                    "handoff": {"state": "open", "version": 2},
                },
            ],
        }
    )
    assert page.startswith(
        "# auto/codex/x\\*y\n\n- Repository: `github.com/acme/app`\n- Versions kept: 2\n- Last saved: T2\n"
    )
    assert page.index("## Version 2 (latest)") < page.index("## Version 1")
    for expected in (
        "- Saved: T2",
        "- Handoff: offered, not accepted yet",
        "### Summary\n\nMoved login to JWT.\nRefresh tokens rotate.",
        "### Plan\n\n1. read auth.py\n2. write the test",
        "- **JWT** — because stateless servers",
        "- **no redis**\n",
        "### Tried\n\n- sessions in redis: too slow",
    ):
        assert expected in page, expected


def test_markdown_file_names_are_readable_unique_and_never_hidden_or_nested() -> None:
    used = {"index.md"}
    assert markdown_file("plan", used) == "plan.md"
    assert markdown_file("Plan", used).startswith("Plan-")  # plan.md is taken on a case-blind disk
    slashed = markdown_file("auto/codex/019a", used)
    assert slashed.startswith("auto_codex_019a-") and "/" not in slashed
    assert markdown_file("index", used).startswith("index-")
    assert markdown_file("../../etc/passwd", used).startswith("_.._etc_passwd-")
    assert not markdown_file(".hidden", used).startswith(".")
    assert markdown_file("a?b", used) != markdown_file("a:b", used)
    assert len(used) == 9


def test_a_listings_note_names_the_version_offered() -> None:
    """A listing shows the latest version; the offer may be of an older one."""
    assert diff.offer_note({"state": "open", "version": 1}) == "handoff open for v1"
    assert diff.offer_note({"state": "accepted", "version": 3}) == "handoff accepted for v3"
    assert diff.offer_note({"state": "open\x1b[2J"}) == "handoff open\\x1b[2J"  # no version: as before
