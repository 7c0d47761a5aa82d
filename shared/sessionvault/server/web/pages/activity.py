"""The activity page: the account's most recent requests from the audit trail (which tool or
page, the outcome, when, and the OAuth client for a token's call), and what the trail leaves out.
Protocol chatter (initialize, tools/list, ...: every client sends it before its work) would bury
the calls, so each run of it folds into one row that opens to its messages; above the table, a
small chart of the calls per day among the rows shown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any

from sessionvault.server.edge import PROTOCOL_METHODS
from sessionvault.server.web.pages.charts import bars
from sessionvault.server.web.pages.layout import Chrome, e, page, row, table, when

COLUMNS = ("When", "Tool or page", "Outcome", "Client")

PROTOCOL = PROTOCOL_METHODS - {"tools/call"}  # a tools/call row names no known tool: keep it shown
DAYS = 30  # the chart's widest span


def activity(chrome: Chrome, rows: Sequence[Mapping[str, Any]]) -> bytes:
    intro = (
        "<p>Your account's most recent requests, from the audit trail: which tool or page, the outcome "
        "and when, and the OAuth client for a call made with a token. The trail does not record which of "
        "your API keys made a call, nor anything you saved.</p>"
    )
    if not rows:
        return page(chrome, "Activity", intro + '<p class="none">No activity recorded.</p>')
    cells: list[str] = []
    run: list[Mapping[str, Any]] = []
    for r in [*rows, {}]:  # the empty row ends the last run of protocol messages
        if r.get("tool") in PROTOCOL:
            run.append(r)
            continue
        if run:
            cells.append(_protocol_row(run))
            run = []
        if not r:
            break
        outcome = "ok" if r["outcome"] == "ok" else f"error ({r.get('error_class') or 'unknown'})"
        cls = "ok" if r["outcome"] == "ok" else "error"
        client = (
            f"OAuth client <code>{e(r['oauth_client_id'])}</code>" if r.get("oauth_client_id") else "API key"
        )
        cells.append(
            row(
                COLUMNS,
                when(r["at"]),
                f"<code>{e(r['tool'])}</code>",
                f'<span class="{cls}">{e(outcome)}</span>',
                client,
            )
        )
    return page(chrome, "Activity", intro + _chart(rows) + table("Recent activity", COLUMNS, cells))


def _protocol_row(run: Sequence[Mapping[str, Any]]) -> str:
    """A run of protocol messages as one row: how many, which, and the newest's time; a
    <details> (no script) opens to each message and its time."""
    counts: dict[str, int] = {}
    for r in run:
        counts[str(r["tool"])] = counts.get(str(r["tool"]), 0) + 1
    kinds = ", ".join(f"{e(t)} &times;{n}" for t, n in counts.items())
    errors = sum(r.get("outcome") != "ok" for r in run)
    outcome = f'<span class="error">{errors} error(s)</span>' if errors else '<span class="ok">ok</span>'
    each = "".join(
        f"<li>{when(r['at'])} <code>{e(r['tool'])}</code>"
        + (
            ""
            if r.get("outcome") == "ok"
            else f' <span class="error">{e(r.get("error_class") or "error")}</span>'
        )
        + "</li>"
        for r in run
    )
    summary = f"{len(run)} protocol message{'s' if len(run) > 1 else ''} ({kinds})"
    listed = f"<details><summary>{summary}</summary><ul>{each}</ul></details>"
    return row(COLUMNS, when(run[0]["at"]), listed, outcome, "", cls="protocol")


def _day(value: object) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    try:
        return datetime.fromisoformat(str(value)).date()
    except ValueError:
        return None


def per_day(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """Calls (everything but protocol messages) per UTC day, oldest first, from the oldest row's
    day (at most DAYS back from the newest) to the newest's, days without calls included."""
    days = [d for r in rows if r.get("tool") not in PROTOCOL and (d := _day(r.get("at"))) is not None]
    if not days:
        return []
    last = max(days)
    first = max(min(days), last - timedelta(days=DAYS - 1))
    counts = {first + timedelta(days=i): 0 for i in range((last - first).days + 1)}
    for d in days:
        if d in counts:
            counts[d] += 1
    return [(d.isoformat(), n) for d, n in counts.items()]


def _chart(rows: Sequence[Mapping[str, Any]]) -> str:
    days = per_day(rows)
    if not days:
        return ""
    total = sum(n for _, n in days)
    picture = bars(days, f"Calls per day, {days[0][0]} to {days[-1][0]}")
    return (
        f'<figure class="chart">{picture}<figcaption>Calls per day among the {len(rows)} newest rows: '
        f"{total} call{'s' if total != 1 else ''}, protocol messages left out.</figcaption></figure>"
    )
