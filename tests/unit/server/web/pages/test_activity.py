"""The activity page folds each run of protocol messages into one row (the calls between runs
stay rows of their own) and charts the calls per day, protocol messages left out."""

from __future__ import annotations

from sessionvault.server.web.pages import activity, layout

CHROME = layout.Chrome("", "token", "activity")


def row(tool: str, at: str, outcome: str = "ok") -> dict[str, object]:
    return {"tool": tool, "at": at, "outcome": outcome, "error_class": None, "oauth_client_id": None}


ROWS = [
    row("save_session", "2026-12-02T10:05:00+00:00"),
    row("tools/list", "2026-12-02T10:04:00+00:00"),
    row("notifications/initialized", "2026-12-02T10:03:00+00:00"),
    row("initialize", "2026-12-02T10:02:00+00:00"),
    row("load_session", "2026-11-29T09:00:00+00:00"),
    row("initialize", "2026-11-29T08:59:00+00:00", "error"),
]


def test_runs_of_protocol_messages_fold_into_one_row_each() -> None:
    page = activity.activity(CHROME, ROWS).decode()
    assert page.count('<tr class="protocol">') == 2
    assert (
        "3 protocol messages (tools/list &times;1, notifications/initialized &times;1, initialize &times;1)"
        in page
    )
    assert "1 protocol message (initialize &times;1)" in page and "1 error(s)" in page
    body = page[page.index("<tbody>") :]
    assert body.index("save_session") < body.index("3 protocol") < body.index("load_session")


def test_calls_per_day_count_calls_only_and_keep_the_empty_days() -> None:
    assert activity.per_day(ROWS) == [
        ("2026-11-29", 1), ("2026-11-30", 0), ("2026-12-01", 0), ("2026-12-02", 1)
    ]  # fmt: skip
    page = activity.activity(CHROME, ROWS).decode()
    assert page.count("<rect ") == 4 and "2 calls, protocol messages left out" in page


def test_the_chart_spans_at_most_30_days_and_skips_unreadable_times() -> None:
    rows = [
        row("save_session", "2026-12-02T00:00:00+00:00"),
        row("save_session", "2026-01-01T00:00:00+00:00"),
    ]
    days = activity.per_day([*rows, row("x", "not a time")])
    assert len(days) == 30 and days[-1] == ("2026-12-02", 1) and sum(n for _, n in days) == 1
    assert activity.per_day([row("tools/list", "2026-12-02T00:00:00+00:00")]) == []
