"""One audit row per request: who, which tool, outcome, error class, latency, salted hashes.
Never a raw error string, key, IP, user agent or session content."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sessionvault.db import Database
from sessionvault.errors import ErrorClass


def salted_hash(value: str | None, salt: str) -> bytes | None:
    return hashlib.sha256((value + salt).encode()).digest() if value else None


@dataclass(frozen=True)
class AuditEvent:
    user_id: str | None
    request_id: str
    tool: str
    error_class: ErrorClass | None
    latency_ms: int
    ip_hash: bytes | None
    ua_hash: bytes | None

    @property
    def outcome(self) -> str:
        return "error" if self.error_class else "ok"


_INSERT = """
INSERT INTO audit_events
    (user_id, request_id, tool, outcome, error_class, latency_ms, ip_hash, ua_hash)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
"""


def record(db: Database, event: AuditEvent) -> None:
    # No tenant for failed authentication: RLS then only admits a row with a NULL user.
    scope = db.tenant(event.user_id) if event.user_id else db.identity()
    with scope as conn:
        conn.execute(
            _INSERT,
            (
                event.user_id,
                event.request_id[:100],
                event.tool[:64],
                event.outcome,
                event.error_class,
                event.latency_ms,
                event.ip_hash,
                event.ua_hash,
            ),
        )
