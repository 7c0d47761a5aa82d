"""Charging a request for more than the one call its admission counted: an import carries many
versions, each as much work as a save (scrubbing, embedding, sealing), so it is counted as
that many tool calls in the user's rate windows (the same counters and lock as
`sessionvault_admit`, migration 0008), taken before the work, and only when they fit: a
charge after the work is no limit, the work is already spent."""

from __future__ import annotations

from dataclasses import dataclass

from sessionvault.db.pool import Connection, Cursor, Database, Tenant

# Under the admission's own per-user lock, so that an import and concurrent calls cannot both
# slip under a limit; the windows as `sessionvault_admit` reads them.
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%(user_id)s::text || '/tool', 7))"
_RESERVE = """
WITH n AS (SELECT clock_timestamp() AS now),
w AS (
    SELECT
        coalesce(sum(c.hits) FILTER (WHERE c.span = 'minute' AND c.slot > n.now - interval '1 minute'), 0)
            AS minute,
        coalesce(sum(c.hits) FILTER (WHERE c.span = 'day'), 0) AS day,
        ceil(EXTRACT(EPOCH FROM min(c.slot) FILTER (
            WHERE c.span = 'minute' AND c.slot > n.now - interval '1 minute'
        ) + interval '1 minute' - n.now)) AS minute_free,
        ceil(EXTRACT(EPOCH FROM min(c.slot) FILTER (WHERE c.span = 'day') + interval '1 day' - n.now))
            AS day_free
    FROM n LEFT JOIN rate_counters c
      ON c.user_id = %(user_id)s AND c.budget = 'tool' AND c.slot > n.now - interval '1 day'
    GROUP BY n.now
),
fit AS (
    SELECT w.*, greatest(0, %(per_minute)s - w.minute) AS minute_left,
           CASE WHEN %(per_day)s > 0 THEN greatest(0, %(per_day)s - w.day) END AS day_left
    FROM w
),
charged AS (
    INSERT INTO rate_counters AS c (user_id, budget, span, slot, hits)
    SELECT %(user_id)s, 'tool', s.span, s.slot, %(hits)s
    FROM fit, n, LATERAL (VALUES ('minute', date_bin('5 seconds', n.now, timestamptz 'epoch')),
                                 ('day', date_bin('1 hour', n.now, timestamptz 'epoch'))) AS s (span, slot)
    WHERE fit.minute_left >= %(hits)s AND coalesce(fit.day_left >= %(hits)s, true)
    ON CONFLICT ON CONSTRAINT rate_counters_pkey DO UPDATE SET hits = c.hits + EXCLUDED.hits
    RETURNING 1
)
SELECT (SELECT count(*) FROM charged) > 0 AS taken, minute_left, day_left, minute_free, day_free FROM fit
"""


@dataclass(frozen=True)
class Reservation:
    """Whether `hits` calls were taken from the windows; if not, how many fit now and when the
    window that refused frees a call (`retry_after_s`), and which window it was."""

    taken: bool
    fits_now: int
    retry_after_s: int
    window: str  # minute | day ('' when taken)


def reserve(db: Database, at: Tenant, hits: int, per_minute: int, per_day: int) -> Reservation:
    """Take `hits` more tool calls from the user's windows now, only if all of them fit (per_day
    0: no day window), in one flight; else take nothing and say what would fit."""
    params = {"user_id": at.space, "hits": hits, "per_minute": per_minute, "per_day": per_day}

    def work(conn: Connection) -> Cursor:
        conn.execute(_LOCK, params)
        return conn.execute(_RESERVE, params)

    row = db.in_tenant(at, work, idempotent=False).fetchone()
    assert row is not None  # one row, whatever the counters hold
    if row["taken"]:
        return Reservation(True, hits, 0, "")
    day_left = row["day_left"]
    by_day = day_left is not None and day_left < hits and day_left <= row["minute_left"]
    fits = min(row["minute_left"], day_left if day_left is not None else row["minute_left"])
    wait = row["day_free"] if by_day else row["minute_free"]
    return Reservation(False, int(fits), max(1, int(wait or 1)), "day" if by_day else "minute")
