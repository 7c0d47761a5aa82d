"""The audit trail: one row per admitted request (written by the admission statement,
`db.admission`; `finish` marks a call that then failed) and one per admin action. Who, which
tool, outcome, error class, salted hashes of IP and user agent, the latency of a failed call.
Never a raw error string, key, IP, user agent or session content. Requests refused before or
at authentication are counted (`auth_failures`) and logged, not stored one row each.

The table is partitioned by UTC day (migration 0017): expired rows go a day at a time, as
whole partitions (`db.partitions`, run by the maintenance task), never by DELETE here."""

from __future__ import annotations

import hashlib

from sessionvault.db.pool import Database
from sessionvault.errors import ErrorClass
from sessionvault.telemetry import RequestLog

_FINISH = (
    "UPDATE audit_events SET outcome = 'error', error_class = %s, latency_ms = %s"
    " WHERE id = %s AND at > now() - interval '1 day'"
)


def salted_hash(value: str | None, salt: str) -> bytes | None:
    return hashlib.sha256((value + salt).encode()).digest() if value else None


def finish(db: Database, user_id: str, audit_id: int, log: RequestLog) -> None:
    """The admitted call failed after all: record its error class and latency on its row.
    The row was written at the call's admission, moments ago: bounding its time lets the
    planner look in the newest day's partitions only, not probe every day's index for the id."""
    with db.tenant(user_id, log.proof) as conn:
        conn.execute(_FINISH, (log.error_class, log.latency_ms, audit_id))


def admin_action(
    db: Database,
    tool: str,
    user_id: str | None,
    key_prefix: str | None,
    request_id: str,
    error_class: ErrorClass | None,
) -> None:
    """An admin action's row: in the target user's tenant, or with no user when there is none."""
    scope = db.tenant(user_id) if user_id else db.identity()
    with scope as conn:
        conn.execute(
            "INSERT INTO audit_events (user_id, request_id, tool, outcome, error_class, key_prefix)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            (user_id, request_id, tool, "error" if error_class else "ok", error_class, key_prefix),
        )
