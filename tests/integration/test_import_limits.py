"""What one request may cost (issue 27, item 3): an import is charged as one tool call per
version it adds, one request holds a bounded number of sessions and versions, and automatic
checkpoints, which count in no session quota, have a per-user cap of their own."""

from __future__ import annotations

import pytest

from sessionvault.core import records
from sessionvault.core.checkpoints import AUTO_MAX_TOTAL
from sessionvault.errors import QuotaExceeded, ValidationFailed
from sessionvault.service import portability

from ..conftest import admin_db, make_user


def tool_hits(user_id: str) -> int:
    with admin_db().tenant(user_id) as conn:
        cur = conn.execute(
            "SELECT coalesce(sum(hits), 0) AS n FROM rate_counters WHERE user_id = %s AND budget = 'tool'"
            " AND span = 'minute'",
            (user_id,),
        )
    return int(cur.fetchone()["n"])


def export_of(count: int, versions: int, prefix: str = "imported") -> list[dict]:
    lines: list[dict] = [{"format": portability.FORMAT}]
    for i in range(count):
        kept = [{"version": v + 1, "record": {"summary": f"s{i}.{v}"}} for v in range(versions)]
        lines.append({"name": f"{prefix}-{i}", "versions": kept})
    return lines


def test_an_import_is_charged_one_tool_call_per_version_it_adds(runtime):
    who = make_user(runtime)
    done = portability.import_lines(runtime.vault, who.principal, export_of(4, 3))
    assert done.versions_added == 12
    assert tool_hits(who.id) == 11  # the admission counted the request itself
    dry = portability.import_lines(runtime.vault, who.principal, export_of(2, 2, "dry"), dry_run=True)
    assert (dry.versions_added, tool_hits(who.id)) == (4, 11)  # a dry run does no work: no charge


def test_a_request_holds_a_bounded_number_of_sessions_and_versions():
    portability.check_request(export_of(portability.MAX_REQUEST_LINES, 1))
    with pytest.raises(ValidationFailed, match="at most"):
        portability.check_request(export_of(portability.MAX_REQUEST_LINES + 1, 1))
    with pytest.raises(ValidationFailed, match="versions"):
        portability.check_request(export_of(2, portability.MAX_REQUEST_VERSIONS // 2 + 1))


def test_checkpoints_have_a_per_user_quota_of_their_own(runtime):
    """Past the quota a new checkpoint is refused; none is deleted to make room (issue 35: the
    old cap pruned across repos and clients, so thirty forged calls left no real checkpoint)."""
    who = make_user(runtime)

    def checkpoint(i: int) -> None:  # one repo and client each: the per-slot pruning never bites
        args = {
            "name": f"auto/c{i}/s",
            "summary": "checkpoint",
            "repo": f"github.com/o/r{i}",
            "client": f"c{i}",
        }
        runtime.vault.save(who.principal, records.parse(records.SaveArgs, args), checkpoint=True)

    for i in range(AUTO_MAX_TOTAL):
        checkpoint(i)
    with pytest.raises(QuotaExceeded, match="checkpoint quota reached"):
        checkpoint(AUTO_MAX_TOTAL)
    listed = runtime.vault.list(who.principal, records.parse(records.ListArgs, {"limit": 100}))
    names = [s["name"] for s in listed["sessions"]]
    assert len(names) == AUTO_MAX_TOTAL and "auto/c0/s" in names  # the oldest stays
