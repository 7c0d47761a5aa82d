"""Sliding-window rate limits kept in Postgres: no Redis, atomic per user under concurrency."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sessionvault.db.pool import Database

_COUNT = """
SELECT count(*) FILTER (WHERE at > clock_timestamp() - interval '1 minute') AS minute,
       count(*) AS day,
       EXTRACT(EPOCH FROM min(at) FILTER (WHERE at > clock_timestamp() - interval '1 minute')
               + interval '1 minute' - clock_timestamp()) AS minute_reset,
       EXTRACT(EPOCH FROM min(at) + interval '1 day' - clock_timestamp()) AS day_reset
FROM rate_limit_events
WHERE user_id = %(user_id)s AND at > clock_timestamp() - interval '1 day'
"""


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    window: str = ""  # minute | day, when refused
    limit: int = 0
    retry_after_s: int = 0


def check(db: Database, user_id: str, per_minute: int, per_day: int) -> Verdict:
    """Admit and record one request, or refuse it naming the full window that frees up last
    (retrying when the minute frees up is pointless while the day is full too)."""
    limits = {"minute": per_minute, "day": per_day}
    with db.tenant(user_id) as conn:
        # One admission at a time per user: count-then-insert is only atomic under this lock.
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))", (user_id,))
        row = conn.execute(_COUNT, {"user_id": user_id}).fetchone()
        full = [
            (max(1, math.ceil(float(row[f"{window}_reset"] or 1))), window)
            for window in limits
            if row[window] >= limits[window]
        ]
        if full:
            wait, window = max(full)
            return Verdict(False, window, limits[window], wait)
        conn.execute("INSERT INTO rate_limit_events (user_id) VALUES (%s)", (user_id,))
    return Verdict(True)


def prune(db: Database, user_id: str) -> int:
    """Drop this user's events older than the longest window."""
    with db.tenant(user_id) as conn:
        cur = conn.execute(
            "DELETE FROM rate_limit_events WHERE user_id = %s AND at < now() - interval '1 day'",
            (user_id,),
        )
        return cur.rowcount
