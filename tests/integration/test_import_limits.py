"""What one request may cost (issue 27 item 3, issue 35 item 7): an import is charged one tool
call per version it carries, before any work and only when all of them fit in the caller's
windows; one request holds a bounded number of sessions and versions; and automatic
checkpoints, which count in no session quota, have a quota of their own."""

from __future__ import annotations

import pytest

from sessionvault.core import records
from sessionvault.core.checkpoints import AUTO_MAX_TOTAL
from sessionvault.errors import BudgetExceeded, QuotaExceeded, ValidationFailed
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


LIMITS = (60, 1000)  # the defaults: per minute, per day


def test_an_import_is_charged_one_tool_call_per_version_it_carries(runtime):
    who = make_user(runtime)
    done = portability.import_lines(runtime.vault, who.principal, export_of(4, 3), limits=LIMITS)
    assert done.versions_added == 12
    assert tool_hits(who.id) == 11  # the admission counted the request itself
    dry = portability.import_lines(
        runtime.vault, who.principal, export_of(2, 2, "dry"), dry_run=True, limits=LIMITS
    )
    assert (dry.versions_added, tool_hits(who.id)) == (4, 11)  # a dry run does no work: no charge


def test_an_import_larger_than_what_remains_is_refused_before_any_work(runtime):
    """The review: with a limit of 60 a minute, one request added 150 versions and its caller
    was blocked only afterwards. Now the request is refused whole, nothing saved, saying how
    many fit now and when more do; what fits is taken."""
    who = make_user(runtime)
    with pytest.raises(BudgetExceeded) as refused:
        portability.import_lines(runtime.vault, who.principal, export_of(50, 3), limits=LIMITS)
    # 61: the window's 60 calls, and the request's own, which its admission counts (not here)
    assert (refused.value.fits_now, refused.value.per_minute) == (61, 60)
    assert 1 <= refused.value.retry_after_s <= 60 and "61 fit now" in str(refused.value)
    assert tool_hits(who.id) == 0  # nothing taken
    listed = runtime.vault.list(who.principal, records.parse(records.ListArgs, {}))
    assert listed["sessions"] == []  # and nothing saved
    done = portability.import_lines(runtime.vault, who.principal, export_of(20, 2), limits=LIMITS)
    assert (done.versions_added, tool_hits(who.id)) == (40, 39)
    with pytest.raises(BudgetExceeded) as again:
        portability.import_lines(runtime.vault, who.principal, export_of(12, 2, "more"), limits=LIMITS)
    assert again.value.fits_now == 22  # 60 - 39 taken, and the request's own call


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
