"""The identity plane: users, their wrapped data keys, and API keys. Reached by the CLI and the
admin function, never by an MCP tool."""

from __future__ import annotations

import uuid
from typing import Any

from sessionvault import apikeys
from sessionvault.db import Database
from sessionvault.keyprovider import KeyProvider


class AccountError(Exception):
    pass


def create_user(db: Database, provider: KeyProvider, name: str) -> str:
    user_id = str(uuid.uuid4())
    _dek, wrapped = provider.generate_data_key(user_id)
    with db.identity() as conn:
        if conn.execute("SELECT 1 FROM users WHERE name = %s", (name,)).fetchone():
            raise AccountError(f"a user named {name!r} already exists")
        conn.execute(
            "INSERT INTO users (id, name, dek_wrapped, key_id) VALUES (%s, %s, %s, %s)",
            (user_id, name, wrapped.blob, wrapped.key_id),
        )
    return user_id


def resolve_user(db: Database, user: str) -> str:
    """A user id from an id or a name."""
    with db.identity() as conn:
        row = conn.execute("SELECT id FROM users WHERE name = %s OR id::text = %s", (user, user)).fetchone()
    if row is None:
        raise AccountError(f"no user {user!r}")
    return str(row["id"])


def create_key(db: Database, user_id: str, label: str = "") -> tuple[str, str]:
    """A new key for the user: returns (the key, shown once; its display prefix)."""
    key = apikeys.generate()
    with db.identity() as conn:
        conn.execute(
            "INSERT INTO api_keys (user_id, key_hash, key_prefix, label) VALUES (%s, %s, %s, %s)",
            (user_id, apikeys.digest(key), apikeys.display_prefix(key), label),
        )
    return key, apikeys.display_prefix(key)


def list_keys(db: Database, user_id: str | None = None) -> list[dict[str, Any]]:
    with db.identity() as conn:
        return conn.execute(
            """
            SELECT u.name AS user, k.key_prefix AS prefix, k.label, k.created_at,
                   k.last_used_at, k.revoked_at
            FROM api_keys k JOIN users u ON u.id = k.user_id
            WHERE %(user_id)s::uuid IS NULL OR k.user_id = %(user_id)s::uuid
            ORDER BY k.created_at
            """,
            {"user_id": user_id},
        ).fetchall()


def revoke_key(db: Database, prefix: str) -> int:
    """Revoke every live key with this display prefix (or full key id); returns how many."""
    if len(prefix) < len(apikeys.PREFIX) + 4:
        raise AccountError("give at least the first 12 characters of the key, e.g. sv_live_a1b2")
    with db.identity() as conn:
        cur = conn.execute(
            "UPDATE api_keys SET revoked_at = now()"
            " WHERE revoked_at IS NULL AND (key_prefix = %s OR id::text = %s)",
            (prefix[: apikeys.PREFIX_CHARS], prefix),
        )
        return cur.rowcount


def disable_user(db: Database, user_id: str) -> None:
    with db.identity() as conn:
        conn.execute("UPDATE users SET disabled_at = now() WHERE id = %s", (user_id,))


def delete_user(db: Database, user_id: str) -> None:
    """Remove the user and everything they own: sessions, versions, keys, limits, audit rows."""
    with db.tenant(user_id) as conn:
        for table in ("session_versions", "sessions", "rate_limit_events", "audit_events"):
            conn.execute(f"DELETE FROM {table} WHERE user_id = %s", (user_id,))
        conn.execute("DELETE FROM users WHERE id = %s", (user_id,))
