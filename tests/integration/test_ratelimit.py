"""The sliding window is atomic: concurrent requests cannot slip past the limit."""

from concurrent.futures import ThreadPoolExecutor

from sessionvault.db import ratelimit
from sessionvault.db.pool import Database

from ..conftest import admin_db, make_user


def test_fifty_concurrent_requests_against_a_limit_of_ten_admit_exactly_ten(runtime, pg):
    who = make_user(runtime)
    db = Database(pg.app_url, min_size=10, max_size=25)
    try:
        with ThreadPoolExecutor(max_workers=25) as pool:
            verdicts = list(pool.map(lambda _: ratelimit.check(db, who.id, 10, 1000), range(50)))
    finally:
        db.close()
    assert sum(v.allowed for v in verdicts) == 10
    refused = [v for v in verdicts if not v.allowed]
    assert {v.window for v in refused} == {"minute"}
    assert all(1 <= v.retry_after_s <= 60 for v in refused)


def test_the_day_window_applies_too(runtime):
    who = make_user(runtime)
    verdicts = [ratelimit.check(runtime.db, who.id, 100, 3) for _ in range(5)]
    assert [v.allowed for v in verdicts] == [True, True, True, False, False]
    assert verdicts[-1].window == "day" and verdicts[-1].limit == 3


def test_when_both_windows_are_full_retry_after_points_past_the_day(runtime):
    who = make_user(runtime)
    assert ratelimit.check(runtime.db, who.id, 1, 1).allowed
    refused = ratelimit.check(runtime.db, who.id, 1, 1)
    assert (refused.window, refused.allowed) == ("day", False)
    assert refused.retry_after_s > 3600


def test_limits_are_per_user(runtime):
    a, b = make_user(runtime), make_user(runtime)
    assert ratelimit.check(runtime.db, a.id, 1, 10).allowed
    assert not ratelimit.check(runtime.db, a.id, 1, 10).allowed
    assert ratelimit.check(runtime.db, b.id, 1, 10).allowed


def test_events_older_than_a_day_are_pruned(runtime):
    who = make_user(runtime)
    with runtime.db.tenant(who.id) as conn:
        conn.execute(
            "INSERT INTO rate_limit_events (user_id, at) VALUES (%s, now() - interval '2 days')", (who.id,)
        )
    assert ratelimit.prune(admin_db(), who.id) == 1  # pruning is the maintenance job's, as admin
    assert ratelimit.prune(admin_db(), who.id) == 0
