"""The identity plane: users, their wrapped data keys, and API keys. Read by the auth step
(one probe per request) and managed by the admin actions; never reached by an MCP tool."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import psycopg.errors

from sessionvault.core import tenant_names
from sessionvault.core.keys import WrappedKey
from sessionvault.db.pool import Connection, Database
from sessionvault.errors import AccountError

Row = dict[str, Any]


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


# People and workspaces share one namespace, unique regardless of letter case: the check and the
# insert under one transaction-scoped lock, so two creations of `Team` and `team` cannot both pass.
_NAME_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('sessionvault/names', 11))"
_NAME_TAKEN = "SELECT name FROM users WHERE lower(name) = lower(%s) LIMIT 1"


def claim_name(conn: Connection, name: str) -> None:
    """Inside the creating transaction: AccountError when `name` is taken, whatever its case."""
    conn.execute(_NAME_LOCK)
    taken = conn.execute(_NAME_TAKEN, (name,)).fetchone()
    if taken is not None:
        # The answer ends "already exists", as deploy reads it (local/deploy/stack.py USER_EXISTS).
        raise AccountError(f"a user or workspace named {taken['name']!r} (names ignore case) already exists")


def insert_user(db: Database, user_id: str, name: str, wrapped: WrappedKey, kind: str = "person") -> None:
    """A new tenant row (a person, or a workspace: migration 0013) with its wrapped data key;
    AccountError when the name is taken (people and workspaces share one namespace)."""
    try:
        with db.identity() as conn:
            claim_name(conn, name)
            conn.execute(
                "INSERT INTO users (id, name, dek_wrapped, key_id, kind) VALUES (%s, %s, %s, %s, %s)",
                (user_id, name, wrapped.blob, wrapped.key_id, kind),
            )
    except psycopg.errors.UniqueViolation:
        raise AccountError(f"a user or workspace named {name!r} already exists") from None


def resolve_user(db: Database, user: str) -> str:
    """A user id from an id (anything that parses as a UUID) or else a name (as typed, in its
    canonical form: core/tenant_names.py): never both."""
    column = "id" if is_uuid(user) else "name"
    with db.identity() as conn:
        row = conn.execute(
            f"SELECT id FROM users WHERE {column}::text = %s AND kind = 'person'",
            (tenant_names.canonical(user),),
        ).fetchone()
    if row is None:
        raise AccountError(f"no user {user!r}")
    return str(row["id"])


def wrapped_key(db: Database, user_id: str) -> WrappedKey:
    with db.identity() as conn:
        row = conn.execute("SELECT dek_wrapped, key_id FROM users WHERE id = %s", (user_id,)).fetchone()
    if row is None:
        raise AccountError(f"no user {user_id!r}")
    return WrappedKey.from_row(row)


def users(db: Database, *, not_under: str | None = None) -> list[Row]:
    """Every user's id and wrapped key, in id order (optionally only those not yet wrapped
    under `not_under`): the maintenance jobs and rotation walk tenants with this."""
    with db.identity() as conn:
        return conn.execute(
            "SELECT id::text AS id, dek_wrapped, key_id FROM users"
            " WHERE %(key)s::text IS NULL OR key_id <> %(key)s ORDER BY id",
            {"key": not_under},
        ).fetchall()


def rewrap(db: Database, user_id: str, old_key_id: str, new: WrappedKey) -> int:
    """Store a re-wrapped DEK, only if the user is still under `old_key_id` (1 if moved)."""
    with db.identity() as conn:
        return conn.execute(
            "UPDATE users SET dek_wrapped = %s, key_id = %s WHERE id = %s AND key_id = %s",
            (new.blob, new.key_id, user_id, old_key_id),
        ).rowcount


def insert_key(
    db: Database, user_id: str, key_hash: bytes, prefix: str, label: str, scopes: tuple[str, ...]
) -> None:
    """A new API key row: its SHA-256 and display prefix only, never the key."""
    with db.identity() as conn:
        conn.execute(
            "INSERT INTO api_keys (user_id, key_hash, key_prefix, label, scopes) VALUES (%s, %s, %s, %s, %s)",
            (user_id, key_hash, prefix, label, list(scopes)),
        )


def live_key_owner(db: Database, key_hash: bytes) -> str | None:
    """The person whose live (unrevoked, not disabled) key hashes to `key_hash`, or None."""
    with db.identity() as conn:
        row = conn.execute(
            "SELECT k.user_id FROM api_keys k JOIN users u ON u.id = k.user_id"
            " WHERE k.key_hash = %s AND k.revoked_at IS NULL AND u.disabled_at IS NULL"
            " AND u.kind = 'person'",
            (key_hash,),
        ).fetchone()
    return None if row is None else str(row["user_id"])


def list_users(db: Database) -> list[Row]:
    """Every user, oldest first: id, name, created_at, disabled_at, and `keys`, how many of
    their keys are not revoked (usable unless the user is disabled)."""
    with db.identity() as conn:
        return conn.execute(
            """
            SELECT u.id::text AS id, u.name, u.created_at, u.disabled_at,
                   count(k.id) FILTER (WHERE k.revoked_at IS NULL) AS keys
            FROM users u LEFT JOIN api_keys k ON k.user_id = u.id
            WHERE u.kind = 'person'
            GROUP BY u.id
            ORDER BY u.created_at, u.name
            """
        ).fetchall()


def list_keys(db: Database, user_id: str | None = None) -> list[Row]:
    """The keys (never a secret), each with its user's disabled_at: a disabled user's keys are
    refused at every request although the keys themselves are not revoked."""
    with db.identity() as conn:
        return conn.execute(
            """
            SELECT u.name AS user, k.key_prefix AS prefix, k.label, k.scopes, k.created_at,
                   k.last_used_at, k.revoked_at, u.disabled_at AS user_disabled_at
            FROM api_keys k JOIN users u ON u.id = k.user_id
            WHERE %(user_id)s::uuid IS NULL OR k.user_id = %(user_id)s::uuid
            ORDER BY k.created_at
            """,
            {"user_id": user_id},
        ).fetchall()


def revoke_matching(db: Database, column: str, value: bytes | str, user_id: str | None, shown: str) -> int:
    """Revoke the one live key whose `column` (key_hash or key_prefix) is `value` (optionally
    within one user); several matches revoke nothing (AccountError naming `shown`)."""
    match = {"key_hash": "key_hash = %(value)s", "key_prefix": "key_prefix = %(value)s"}[column]
    with db.identity() as conn:
        live = conn.execute(
            f"SELECT id FROM api_keys WHERE revoked_at IS NULL AND {match}"  # match: one of two literals
            " AND (%(user_id)s::uuid IS NULL OR user_id = %(user_id)s::uuid)",
            {"value": value, "user_id": user_id},
        ).fetchall()
        if len(live) > 1:
            raise AccountError(f"{len(live)} keys start with {shown}: give the whole key or the user")
        for row in live:
            conn.execute("UPDATE api_keys SET revoked_at = now() WHERE id = %s", (row["id"],))
        return len(live)


def disable_user(db: Database, user_id: str) -> None:
    with db.identity() as conn:
        conn.execute("UPDATE users SET disabled_at = now() WHERE id = %s", (user_id,))


def enable_user(db: Database, user_id: str) -> None:
    """Undo disable_user: the keys that are not revoked are accepted again."""
    with db.identity() as conn:
        conn.execute("UPDATE users SET disabled_at = NULL WHERE id = %s", (user_id,))


def delete_user(db: Database, user_id: str) -> None:
    """Remove the user and everything they own: sessions, versions, keys, limits, audit rows.

    The wrapped data key is destroyed first, in a transaction of its own (crypto-shredding):
    should the deletion stop halfway, or a copy of the session rows survive elsewhere (a
    replica, a table-level export), no key to open them is left in this database."""
    with db.identity() as conn:
        conn.execute("UPDATE users SET dek_wrapped = '', key_id = 'shredded' WHERE id = %s", (user_id,))
    with db.tenant(user_id) as conn:
        for table in ("session_versions", "sessions", "rate_counters", "user_usage", "audit_events"):
            conn.execute(f"DELETE FROM {table} WHERE user_id = %s", (user_id,))
        conn.execute("DELETE FROM users WHERE id = %s", (user_id,))


def replace_wrapped_key(conn: Connection, user_id: str, new: WrappedKey) -> None:
    """Inside a re-key's transaction: the user's data key is now `new`."""
    conn.execute(
        "UPDATE users SET dek_wrapped = %s, key_id = %s, dek_created_at = now() WHERE id = %s",
        (new.blob, new.key_id, user_id),
    )


def users_keyed_before(db: Database, moment: datetime) -> list[str]:
    with db.identity() as conn:
        rows = conn.execute(
            "SELECT id::text AS id FROM users WHERE dek_created_at < %s ORDER BY id", (moment,)
        ).fetchall()
    return [r["id"] for r in rows]


def rotate_proof_key(db: Database) -> int:
    """A new key for the tenant proofs (migration 0020; the old one verifies 2 minutes more):
    its id. For the admin role, which may call it; the serving role may not."""
    with db.identity() as conn:
        row = conn.execute("SELECT sessionvault_rotate_proof_key() AS id").fetchone()
    return int(row["id"]) if row else 0
