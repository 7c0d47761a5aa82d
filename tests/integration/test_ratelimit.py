"""Admission: the rate limit is atomic (concurrent requests cannot slip past it), costs the
same whatever the volume, and keeps tool calls and protocol messages on separate budgets."""

from concurrent.futures import ThreadPoolExecutor

from sessionvault.core import apikeys
from sessionvault.db import admission
from sessionvault.db.admission import Limits
from sessionvault.db.pool import Database

from ..conftest import admin_db, make_user


def admit(db, who, limits, budget="tool"):
    return admission.admit(
        db, apikeys.digest(who.key), budget, limits, request_id="r", tool="t", ip_hash=None, ua_hash=None
    )


def test_fifty_concurrent_requests_against_a_limit_of_ten_admit_exactly_ten(runtime, pg):
    who = make_user(runtime)
    db = Database(pg.app_url, min_size=10, max_size=25)
    try:
        with ThreadPoolExecutor(max_workers=25) as pool:
            verdicts = list(pool.map(lambda _: admit(db, who, Limits(10, 1000)), range(50)))
    finally:
        db.close()
    assert sum(v.status == "ok" for v in verdicts) == 10
    refused = [v for v in verdicts if v.status != "ok"]
    assert {(v.status, v.window) for v in refused} == {("rate_limited", "minute")}
    assert all(1 <= v.retry_after_s <= 60 for v in refused)


def test_the_day_window_applies_too(runtime):
    who = make_user(runtime)
    verdicts = [admit(runtime.db, who, Limits(100, 3)) for _ in range(5)]
    assert [v.status for v in verdicts] == ["ok", "ok", "ok", "rate_limited", "rate_limited"]
    assert verdicts[-1].window == "day" and verdicts[-1].limit == 3


def test_when_both_windows_are_full_retry_after_points_past_the_day(runtime):
    who = make_user(runtime)
    assert admit(runtime.db, who, Limits(1, 1)).status == "ok"
    refused = admit(runtime.db, who, Limits(1, 1))
    assert (refused.window, refused.status) == ("day", "rate_limited")
    assert refused.retry_after_s > 3600


def test_limits_are_per_user(runtime):
    a, b = make_user(runtime), make_user(runtime)
    assert admit(runtime.db, a, Limits(1, 10)).status == "ok"
    assert admit(runtime.db, a, Limits(1, 10)).status == "rate_limited"
    assert admit(runtime.db, b, Limits(1, 10)).status == "ok"


def test_protocol_messages_spend_their_own_budget_not_the_tool_budget(runtime):
    who = make_user(runtime)
    for _ in range(5):
        assert admit(runtime.db, who, Limits(100, 0), budget="protocol").status == "ok"
    assert admit(runtime.db, who, Limits(1, 10)).status == "ok"  # the tool budget is untouched
    assert admit(runtime.db, who, Limits(1, 10)).status == "rate_limited"


def test_a_check_reads_a_bounded_number_of_counter_rows_whatever_the_volume(runtime):
    who = make_user(runtime)
    for _ in range(300):
        admit(runtime.db, who, Limits(10_000, 100_000))
    with runtime.db.tenant(who.id, who.principal.proof) as conn:
        cur = conn.execute(
            "SELECT count(*) AS n, sum(hits) AS hits FROM rate_counters WHERE user_id = %s", (who.id,)
        )
    row = cur.fetchone()
    # a minute slot every 5 s and a day slot every hour: 300 fast calls land in a handful of rows
    assert row["hits"] == 600 and row["n"] <= 6


def test_counter_slots_older_than_a_day_are_pruned(runtime):
    who = make_user(runtime)
    with admin_db().tenant(who.id) as conn:
        conn.execute(
            "INSERT INTO rate_counters (user_id, budget, span, slot, hits)"
            " VALUES (%s, 'tool', 'day', now() - interval '2 days', 5)",
            (who.id,),
        )
    assert admission.prune(admin_db(), who.id) == 1  # pruning is the maintenance job's, as admin
    assert admission.prune(admin_db(), who.id) == 0
