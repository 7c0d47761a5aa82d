"""What every reader shares (transcript.py): streaming a JSONL file in bounded memory, the
Transcript's own lists, and the helpers each reader uses the same way."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

from sessionvault.local.hook.capture import transcript
from sessionvault.local.hook.capture.transcript import (
    KEEP,
    Capped,
    Transcript,
    clip,
    json_lines,
    newest,
    patched_files,
    relative,
    todo_items,
)

# Streaming.


def test_json_lines_skips_a_line_longer_than_max_line_without_holding_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"huge": "' + b"x" * 10_000_000 + b'"}\n')
        handle.write(b'{"after": 1}\n')
    # A small limit, so that holding the 10 MB line (or any large part of it) would show.
    monkeypatch.setattr(transcript, "MAX_LINE", 64 * 1024)
    tracemalloc.start()
    try:
        read = list(json_lines(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert read == [{"after": 1}]
    assert peak < 1_000_000, f"{peak} bytes held reading a 10 MB line"


@pytest.mark.parametrize(("size", "kept"), [(transcript.MAX_LINE, True), (transcript.MAX_LINE + 1, False)])
def test_a_line_of_max_line_bytes_is_read_and_one_byte_more_is_skipped(
    tmp_path: Path, size: int, kept: bool
) -> None:
    line = b'{"x": "' + b"y" * (size - len(b'{"x": ""}\n')) + b'"}\n'
    path = tmp_path / "t.jsonl"
    path.write_bytes(line + b'{"after": 1}\n')
    assert len(line) == size
    assert [e for e in json_lines(path) if "x" in e] == ([json.loads(line)] if kept else [])
    assert list(json_lines(path))[-1] == {"after": 1}


@pytest.mark.parametrize("torn", ["[1]", '"text"', "{not json", "[" * 100_000, '{"cut": "hal'])
def test_json_lines_skips_what_is_not_a_json_object(tmp_path: Path, torn: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(f'{torn}\n{{"after": 1}}\n{{"last": "no newline"}}')
    assert list(json_lines(path)) == [{"after": 1}, {"last": "no newline"}]


# The Transcript and bounded memory.


def test_a_touched_file_is_named_relative_to_the_session_folder_and_listed_once_most_recent_last() -> None:
    read = Transcript("test", cwd="/p")
    for path in ["/p/a.py", "/elsewhere/b.py", "c.py", "/p/a.py"]:
        read.touch(path)
    assert list(read.files) == ["/elsewhere/b.py", "c.py", "a.py"]


def test_the_transcripts_lists_keep_only_the_latest_keep_entries() -> None:
    read = Transcript("test")
    for n in range(KEEP * 3):
        read.asks.append(f"ask {n}")
        read.touch(f"f{n}")
        read.set_todo(f"task {n}", "pending")
    assert [len(read.asks), len(read.files), len(read.todos)] == [KEEP] * 3
    assert read.asks[0] == f"ask {KEEP * 2}" and next(iter(read.todos)) == f"task {KEEP * 2}"
    read.set_todos([(f"t{n}", "pending") for n in range(KEEP * 2)])
    assert list(read.todos) == [f"t{n}" for n in range(KEEP, KEEP * 2)]


def test_a_capped_dict_forgets_its_oldest_entries() -> None:
    pending: Capped[str, int] = Capped(3)
    for n in range(5):
        pending[f"call {n}"] = n
    pending["call 2"] = 20  # an update keeps its place
    assert list(pending.items()) == [("call 2", 20), ("call 3", 3), ("call 4", 4)]


# The helpers.


@pytest.mark.parametrize(
    ("path", "cwd", "named"),
    [
        ("/p/src/a.py", "/p", "src/a.py"),
        ("/p/src/a.py", "/p/", "src/a.py"),
        ("/p", "/p", "."),
        ("/p2/a.py", "/p", "/p2/a.py"),  # a sibling sharing the folder's name as a prefix
        ("/p/../etc/hosts", "/p", "/p/../etc/hosts"),
        ("/etc/hosts", "/p", "/etc/hosts"),
        ("src/a.py", "/p", "src/a.py"),
        ("/p/a.py", "", "/p/a.py"),
        ("/p/a.py", "p", "/p/a.py"),  # a folder not absolute: no telling where it is
    ],
)
def test_relative_names_a_path_inside_the_folder_from_it_and_any_other_as_given(
    path: str, cwd: str, named: str
) -> None:
    assert relative(path, cwd) == named


def test_todo_items_take_the_first_text_key_and_make_a_missing_status_pending() -> None:
    todos = [
        {"description": " plan ", "content": "ignored", "status": "completed"},
        {"content": "build"},
        {"description": "", "status": "pending"},
        {"description": None, "content": "test", "status": None},
        "not a task",
        {"status": "in_progress"},
    ]
    assert todo_items(todos, "description", "content") == [
        ("plan", "completed"),
        ("build", "pending"),
        ("test", "pending"),
    ]


def test_patched_files_are_those_an_apply_patch_envelope_adds_updates_or_moves_to() -> None:
    envelope = (
        "*** Begin Patch\n*** Add File: notes/plan.md\n+# Plan\n*** Update File: src/a.py \r\n"
        "*** Move to: src/b.py\n@@\n-x\n+y\n*** Delete File: old.py\n*** End Patch\n"
    )
    assert patched_files(envelope) == ["notes/plan.md", "src/a.py", "src/b.py"]


def test_clip_marks_a_cut_with_an_ellipsis_within_the_limit() -> None:
    assert clip("short", 5) == "short"
    assert clip("longer", 5) == "long…"


def test_newest_is_the_most_recently_written_and_of_two_at_once_the_later_name(tmp_path: Path) -> None:
    old, same_a, same_b = (tmp_path / n for n in ("old", "a", "b"))
    for path, when in ((old, 1), (same_a, 2), (same_b, 2)):
        path.write_text("")
        os.utime(path, (when, when))
    assert newest([same_b, old, same_a]) == same_b
    assert newest([old, tmp_path / "gone since it was listed"]) == old
    assert newest([]) is None


# Held back, then scrubbed, then clipped.

GHP = "gh" + "p_Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzAbCd"


def test_cut_never_ends_in_part_of_a_word() -> None:
    assert transcript.cut("short", 10) == "short"
    assert transcript.cut(f"token {GHP} rest", 20) == "token"
    assert transcript.cut("one two", 3) == "one"
    assert transcript.cut("x" * 50, 10) == ""  # one long word: nothing of it


def test_a_key_at_the_clip_is_scrubbed_before_it_is_cut() -> None:
    text = "x " * 45 + GHP  # the key straddles the 100th character
    assert clip(text, 100).endswith(GHP[: 100 - 91] + "…")  # clipping alone keeps its start
    kept = transcript.scrubbed(text, 100)
    assert "Zx9Qw8" not in kept and "[REDACTED" in kept and len(kept) <= 100


def test_scrubbed_takes_private_spans_out_first() -> None:
    kept = transcript.scrubbed("deploy <private>the vault is at 10.0.0.9</private> then <PRIVATE>rest", 200)
    assert kept == "deploy [private] then [private]"


def test_a_transcript_withholds_only_what_a_private_file_printed(tmp_path: Path) -> None:
    t = Transcript(client="claude-code", cwd=str(tmp_path))
    t.output_of("cat src/app.py", "DEBUG_MODE=on_for_tests\n")
    t.output_of("cat .env.local", "DB_HOST=db.internal\nX=1\n")
    assert t.withheld == {"DB_HOST=db.internal"}  # short lines ("X=1") are too common to withhold
