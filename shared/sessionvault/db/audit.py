"""One audit row per request: who, which tool, outcome, error class, salted hashes, and the
latency of a request that failed. Never a raw error string, key, IP, user agent or session
content. Admitted requests get their row from the admission statement (`db.admission`);
`finish` marks it when the call then fails; `record` writes the row of a request that never
reached admission (no key, a malformed key, an unreadable body)."""

from __future__ import annotations

import hashlib

from sessionvault.db.pool import Database
from sessionvault.telemetry import RequestLog


def salted_hash(value: str | None, salt: str) -> bytes | None:
    return hashlib.sha256((value + salt).encode()).digest() if value else None


_INSERT = """
INSERT INTO audit_events
    (user_id, request_id, tool, outcome, error_class, latency_ms, ip_hash, ua_hash)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
"""


def finish(db: Database, user_id: str, audit_id: int, log: RequestLog) -> None:
    """The admitted call failed after all: record its error class and latency on its row."""
    with db.tenant(user_id) as conn:
        conn.execute(
            "UPDATE audit_events SET outcome = 'error', error_class = %s, latency_ms = %s WHERE id = %s",
            (log.error_class, log.latency_ms, audit_id),
        )


def record(db: Database, log: RequestLog, salt: str) -> None:
    # No tenant for failed authentication: RLS then only admits a row with a NULL user.
    scope = db.tenant(log.user_id) if log.user_id else db.identity()
    with scope as conn:
        conn.execute(
            _INSERT,
            (
                log.user_id,
                log.request_id,
                log.tool,
                log.outcome,
                log.error_class,
                log.latency_ms,
                salted_hash(log.ip, salt),
                salted_hash(log.user_agent, salt),
            ),
        )


_PRUNE = (
    "DELETE FROM audit_events WHERE user_id IS NOT DISTINCT FROM %s AND at < now() - %s * interval '1 day'"
)


def prune(db: Database, user_id: str | None, retention_days: int) -> int:
    """Drop one tenant's rows older than the retention (user None: failed authentications)."""
    scope = db.tenant(user_id) if user_id else db.identity()
    with scope as conn:
        cur = conn.execute(_PRUNE, (user_id, retention_days))
    return cur.rowcount
