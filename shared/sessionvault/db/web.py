"""What the web view (`server/web/`) reads and changes beyond the tools' own data: the signed-in
person's keys (through the definer functions of migration 0010, given the signed-in key's
SHA-256: the serving role reads no key itself), revoking one of them or making another (its
hash and prefix only: migration 0025), and the account's recent
audit rows (under RLS, in the request's tenant)."""

from __future__ import annotations

from typing import Any, Literal, cast

from sessionvault.db.pool import Connection, Database, Tenant

Row = dict[str, Any]
Revoked = Literal["revoked", "unknown_key", "scope", "not_found"]
Created = Literal["created", "unknown_key", "scope", "invalid", "too_many"]

_KEYS = "SELECT * FROM sessionvault_web_keys(%s)"
_REVOKE = "SELECT sessionvault_web_revoke(%s, %s::uuid) AS status"
_CREATE = "SELECT sessionvault_web_create_key(%s, %s, %s, %s, %s::text[]) AS status"
_ACTIVITY = """
SELECT at, tool, outcome, error_class, oauth_client_id
FROM audit_events
WHERE user_id = %(user_id)s
ORDER BY at DESC
LIMIT %(limit)s
"""


def keys(db: Database, key_hash: bytes) -> list[Row]:
    """Every key of the user whose live key has this SHA-256, oldest first: id, prefix, label,
    scopes, created_at, last_used_at, revoked_at and `current` (the key asked with). Empty if
    that key is unknown, revoked or its user disabled."""
    return list(db.first_use(lambda conn: conn.execute(_KEYS, (key_hash,)).fetchall()))


def revoke(db: Database, key_hash: bytes, key_id: str) -> Revoked:
    """Revoke `key_id` for the holder of the live key `key_hash`, which must have the delete
    scope and belong to the same user."""
    row = db.first_use(lambda conn: conn.execute(_REVOKE, (key_hash, key_id)).fetchone())
    return cast(Revoked, row["status"] if row else "not_found")


def create_key(
    db: Database, key_hash: bytes, new_hash: bytes, prefix: str, label: str, scopes: tuple[str, ...]
) -> Created:
    """A new key (its SHA-256 and prefix only) for the holder of the live key `key_hash`, which
    must have the delete scope and every scope asked for."""
    params = (key_hash, new_hash, prefix, label, list(scopes))
    row = db.first_use(lambda conn: conn.execute(_CREATE, params).fetchone())
    return cast(Created, row["status"] if row else "unknown_key")


def activity(db: Database, at: Tenant, limit: int) -> list[Row]:
    """The user's newest `limit` audit rows: when, which tool (or page), the outcome and its
    error class, and the OAuth client (None: an API key). Nothing else the trail holds."""
    user_id = at.space
    params = {"user_id": user_id, "limit": limit}

    def work(conn: Connection) -> Any:
        return conn.execute(_ACTIVITY, params)

    return list(db.in_tenant(at, work, idempotent=True))
