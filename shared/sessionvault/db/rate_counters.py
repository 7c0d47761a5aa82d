"""Charging a request for more than the one call its admission counted: an import adds many
versions, each as much work as a save (scrubbing, embedding, sealing), so it is counted as
that many tool calls in the user's rate windows (the same counters `sessionvault_admit` uses,
migration 0002), and the user's next calls meet the limit as if they had been saves."""

from __future__ import annotations

from sessionvault.db.pool import Database, Tenant

_CHARGE = """
INSERT INTO rate_counters AS c (user_id, budget, span, slot, hits)
VALUES (%(user_id)s, %(budget)s, 'minute',
        date_bin('5 seconds', clock_timestamp(), timestamptz 'epoch'), %(hits)s),
       (%(user_id)s, %(budget)s, 'day', date_bin('1 hour', clock_timestamp(), timestamptz 'epoch'), %(hits)s)
ON CONFLICT ON CONSTRAINT rate_counters_pkey DO UPDATE SET hits = c.hits + EXCLUDED.hits
"""


def charge(db: Database, at: Tenant, hits: int, budget: str = "tool") -> None:
    """Count `hits` more calls of `budget` for the user, now (nothing when hits <= 0)."""
    user_id = at.space
    if hits > 0:
        params = {"user_id": user_id, "budget": budget, "hits": hits}
        db.in_tenant(at, lambda conn: conn.execute(_CHARGE, params), idempotent=False)
