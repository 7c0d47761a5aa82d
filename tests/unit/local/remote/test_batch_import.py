"""The batched import: line numbers of the whole input, a bad line stops it, a 429 is waited
out, batches sized by how fast the server is."""

from __future__ import annotations

import json

import pytest

from sessionvault.errors import (
    ValidationFailed,
)
from sessionvault.local.remote import batch_import

from .fake_api import FORMAT, HEADER, Canned, Fake, error

# --------------------------------------------------------------------------- import


def result(sessions: int = 1, added: int = 1, there: int = 0, problems: list[str] | None = None) -> Canned:
    body = {
        "sessions": sessions,
        "versions_added": added,
        "versions_already_there": there,
        "problems": problems or [],
    }
    return Canned(body=json.dumps(body).encode())


def session(name: str, versions: int = 1) -> bytes:
    kept = [
        {"version": n, "saved_at": "", "record": {"summary": f"{name}{n}"}} for n in range(1, versions + 1)
    ]
    return json.dumps({"name": name, "repo": "", "versions": kept}).encode() + b"\n"


def test_an_import_is_sent_in_batches_each_with_the_header(
    fake: Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch_import, "BATCH_VERSIONS", (1, 2, 2))
    api = fake.reply(result(2, 2), result(1, 1, problems=["line 2: invalid arguments: summary"]))
    lines = [HEADER + b"\n", session("a"), b"\n", session("b"), session("c")]
    done = batch_import.import_lines(api, lines, format_name=FORMAT, dry_run=True)
    bodies = [s.body.splitlines() for s in fake.seen]
    assert bodies == [[HEADER, session("a")[:-1], session("b")[:-1]], [HEADER, session("c")[:-1]]]
    assert all(
        s.query == {"dry_run": "1"} and s.headers["content-type"] == "application/x-ndjson" for s in fake.seen
    )
    assert (done.sessions, done.versions_added, done.lines_done, done.stopped) == (3, 3, 5, "")
    assert done.problems == ["line 5: invalid arguments: summary"]  # the input's line, not the batch's


def test_a_line_that_is_not_json_stops_the_import_there(fake: Fake) -> None:
    api = fake.reply(result())
    lines = [HEADER + b"\n", session("a"), b'{"name": "b", "vers\n', session("c")]
    done = batch_import.import_lines(api, lines, format_name=FORMAT)
    assert [len(s.body.splitlines()) for s in fake.seen] == [2]  # the line before it only
    assert (
        done.lines_done == 2
        and "line 3 is not JSON" in done.stopped
        and "nothing from line 3 on" in done.stopped
    )


def test_an_input_that_is_not_an_export_sends_nothing(fake: Fake) -> None:
    api = fake.reply(result())
    with pytest.raises(ValidationFailed, match="not a SessionVault export"):
        batch_import.import_lines(api, [session("a")], format_name=FORMAT)
    with pytest.raises(ValidationFailed, match="the input is empty"):
        batch_import.import_lines(api, [b"\n"], format_name=FORMAT)
    assert fake.seen == []


def test_a_rate_limited_batch_is_sent_again_after_retry_after(fake: Fake) -> None:
    api = fake.reply(Canned(429, b"{}", {"Retry-After": "3"}), result())
    slept: list[float] = []
    said: list[str] = []
    done = batch_import.import_lines(
        api, [HEADER, session("a")], format_name=FORMAT, sleep=slept.append, waiting=said.append
    )
    assert slept == [3] and len(fake.seen) == 2 and done.versions_added == 1 and not done.stopped
    assert "trying lines 2-2 again in 3 s" in said[0]


def test_a_batch_larger_than_a_minutes_budget_goes_in_halves_each_paced(fake: Fake) -> None:
    """Issue 35 item 7: the server refuses an import larger than what remains, before any work,
    naming its per-minute limit; a batch that could never fit in one minute is halved, and each
    half waits out its own Retry-After."""
    too_big = Canned(
        429, error("rate_limit", "this import carries 4 versions", per_minute=2), {"Retry-After": "5"}
    )
    api = fake.reply(
        too_big,
        result(2, 2),
        Canned(429, error("rate_limit", "later", per_minute=2), {"Retry-After": "7"}),
        result(2, 2),
    )
    slept: list[float] = []
    lines = [HEADER, session("a"), session("b"), session("c"), session("d")]
    done = batch_import.import_lines(api, lines, format_name=FORMAT, sleep=slept.append)
    sent = [[json.loads(line)["name"] for line in s.body.splitlines()[1:]] for s in fake.seen]
    assert sent == [["a", "b", "c", "d"], ["a", "b"], ["c", "d"], ["c", "d"]]
    assert slept == [7] and (done.versions_added, done.lines_done, done.stopped) == (4, 5, "")


def test_a_quota_or_a_long_wait_stops_the_import_and_says_how_far_it_got(fake: Fake, monkeypatch) -> None:
    monkeypatch.setattr(batch_import, "BATCH_VERSIONS", (1, 1, 1))
    api = fake.reply(result(), Canned(409, error("quota", "storage quota reached")))
    done = batch_import.import_lines(api, [HEADER, session("a"), session("b")], format_name=FORMAT)
    assert done.lines_done == 2 and done.stopped.startswith("stopped at lines 3-3: storage quota reached")
    assert (
        "Everything up to line 2 is imported" in done.stopped and "adds only what is missing" in done.stopped
    )
    api = fake.reply(Canned(429, b"{}", {"Retry-After": "86400"}))  # the day's limit: not waited for
    done = batch_import.import_lines(api, [HEADER, session("a")], format_name=FORMAT, sleep=pytest.fail)
    assert "rate limiting" in done.stopped and done.lines_done == 1


def test_batches_grow_when_the_server_is_fast() -> None:
    low, first, high = batch_import.BATCH_VERSIONS
    assert batch_import._next_size(first, 25, 0.25) == min(high, int(batch_import.BATCH_TARGET_S / 0.01))
    assert batch_import._next_size(first, 25, 100.0) == low
    assert batch_import._next_size(first, 0, 1.0) == first


def test_save_arguments_become_an_export_document() -> None:
    records = [
        {"name": "m/1", "summary": "one", "repo": "github.com/a/b", "handoff": True},
        {"name": "m/2", "summary": "two"},
        {"name": "m/1", "summary": "one, later", "repo": "github.com/a/b", "to_client": "codex"},
    ]
    lines = [json.loads(line) for line in batch_import.as_export(records, FORMAT)]
    assert lines[0] == {"format": FORMAT}
    assert lines[1] == {
        "name": "m/1",
        "repo": "github.com/a/b",
        "versions": [
            {"version": 1, "saved_at": "", "record": {"summary": "one", "repo": "github.com/a/b"}},
            {"version": 2, "saved_at": "", "record": {"summary": "one, later", "repo": "github.com/a/b"}},
        ],
    }
    assert lines[2]["name"] == "m/2" and lines[3] == {"end": True, "sessions": 2} and len(lines) == 4
    with pytest.raises(ValidationFailed, match="needs a name"):
        list(batch_import.as_export([{"summary": "x"}], FORMAT))


# --------------------------------------------------------------------------- a whole export


def end(sessions: int) -> bytes:
    return json.dumps({"end": True, "sessions": sessions}).encode() + b"\n"


def test_a_whole_export_ends_with_its_end_line_which_is_not_sent(fake: Fake) -> None:
    api = fake.reply(result(2, 2))
    done = batch_import.import_lines(
        api, [HEADER + b"\n", session("a"), session("b"), end(2)], format_name=FORMAT
    )
    assert (done.incomplete, done.stopped, done.lines_done) == ("", "", 4)
    assert [len(s.body.splitlines()) for s in fake.seen] == [3]  # the header and two sessions


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        ([session("a"), session("b")], "the input has no end line"),  # cut at a line boundary
        ([session("a"), end(2)], "the export's end line says 2 session(s), but it held 1"),
        ([session("a"), end(1), session("b")], "the input has no end line"),  # not its last line
    ],
)
def test_an_export_that_is_not_whole_is_imported_and_said_incomplete(
    fake: Fake, lines: list[bytes], said: str
) -> None:
    api = fake.reply(result(len(lines)))
    done = batch_import.import_lines(api, [HEADER + b"\n", *lines], format_name=FORMAT)
    assert done.incomplete.startswith(said) and "nothing is added twice" in done.incomplete
    assert done.stopped == "" and len(fake.seen) == 1  # what it holds was imported
    assert done.as_dict()["incomplete"] == done.incomplete


def test_progress_is_reported_before_each_batch(fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_import, "BATCH_VERSIONS", (1, 1, 1))
    api = fake.reply(result(1, 1))
    seen: list[tuple[int, int]] = []
    lines = [HEADER + b"\n", session("a"), session("b"), session("c"), end(3)]
    batch_import.import_lines(
        api, lines, format_name=FORMAT, progress=lambda done, line: seen.append((done.sessions, line))
    )
    assert seen == [(0, 2), (1, 3), (2, 4)]  # before each POST: how far it is, and the batch's end
