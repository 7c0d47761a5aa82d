"""Workspaces (migration 0013, docs/teams.md): a member's view through the definer functions
(the serving role reads no membership itself), and the admin role's membership rows.

A workspace is a `users` row of kind 'workspace': its id is the tenant of its sessions, its
wrapped data key is that row's. Entering one inside a call's transaction is `db.pool.Entering`."""

from __future__ import annotations

from typing import Any

import psycopg.errors

from sessionvault.core import tenant_names
from sessionvault.core.keys import WrappedKey
from sessionvault.db import identity
from sessionvault.db.pool import Database, Tenant
from sessionvault.errors import AccountError

Row = dict[str, Any]
ROLES = ("owner", "member", "reader")

_RESOLVE = "SELECT id::text AS id, dek_wrapped, key_id, role FROM sessionvault_workspace(%s)"
MINE = "SELECT id::text AS id, name, role FROM sessionvault_my_workspaces()"
ELSEWHERE = "SELECT space::text AS space, name, offered_at FROM sessionvault_newest_offer_elsewhere(%s, %s)"
_OFFER_TARGET = "SELECT id::text AS id, role, disabled FROM sessionvault_offer_target(%s)"


def resolve(db: Database, caller: Tenant, name: str) -> Row | None:
    """The caller's workspace `name`: id, wrapped key and role; None for a non-member (or no
    such workspace: the same answer)."""
    return db.in_tenant(caller, lambda conn: conn.execute(_RESOLVE, (name,)), idempotent=True).fetchone()


def mine(db: Database, caller: Tenant) -> list[Row]:
    """Every workspace the caller belongs to: id, name, role."""
    return list(db.in_tenant(caller, lambda conn: conn.execute(MINE), idempotent=True))


def offer_target(db: Database, space: Tenant, name: str) -> Row | None:
    """Inside the entered workspace `space`: its member named `name` as an offer needs them (id,
    role, disabled), or None for no such member (migration 0019)."""
    return db.in_tenant(space, lambda conn: conn.execute(_OFFER_TARGET, (name,)), idempotent=True).fetchone()


# ---------------------------------------------------------------- the admin role's side


def create(db: Database, workspace_id: str, name: str, wrapped: WrappedKey, owner_id: str) -> None:
    """The workspace's row, with its wrapped data key, and its first owner, in one transaction."""
    try:
        with db.identity() as conn:
            identity.claim_name(conn, name)
            conn.execute(
                "INSERT INTO users (id, name, dek_wrapped, key_id, kind)"
                " VALUES (%s, %s, %s, %s, 'workspace')",
                (workspace_id, name, wrapped.blob, wrapped.key_id),
            )
            conn.execute(
                "INSERT INTO workspace_members (workspace_id, user_id, role) VALUES (%s, %s, 'owner')",
                (workspace_id, owner_id),
            )
    except psycopg.errors.UniqueViolation:
        raise AccountError(f"a user or workspace named {name!r} already exists") from None


def find(db: Database, name: str) -> str:
    """A workspace's id by its name, or by its id (AccountError if there is none)."""
    column = "id" if identity.is_uuid(name) else "name"
    with db.identity() as conn:
        row = conn.execute(
            f"SELECT id FROM users WHERE {column}::text = %s AND kind = 'workspace'",
            (tenant_names.canonical(name),),
        ).fetchone()
    if row is None:
        raise AccountError(f"no workspace {name!r}")
    return str(row["id"])


def set_role(db: Database, workspace_id: str, user_id: str, role: str, *, add: bool) -> str | None:
    """Give `user_id` `role` in the workspace (adding them when `add`); the role they had before
    (None: they were not a member). Refuses to leave the workspace without an owner."""
    with db.identity() as conn:
        before = _role(conn, workspace_id, user_id)
        if before is None and not add:
            raise AccountError("not a member of that workspace: add them first")
        if before == "owner" and role != "owner":
            _keep_an_owner(conn, workspace_id)
        conn.execute(
            "INSERT INTO workspace_members (workspace_id, user_id, role) VALUES (%s, %s, %s)"
            " ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = EXCLUDED.role",
            (workspace_id, user_id, role),
        )
    return before


def remove(db: Database, workspace_id: str, user_id: str) -> str | None:
    """Take `user_id` out of the workspace; the role they had (None: not a member)."""
    with db.identity() as conn:
        before = _role(conn, workspace_id, user_id)
        if before == "owner":
            _keep_an_owner(conn, workspace_id)
        conn.execute(
            "DELETE FROM workspace_members WHERE workspace_id = %s AND user_id = %s", (workspace_id, user_id)
        )
    return before


def members(db: Database, workspace_id: str) -> list[Row]:
    """The workspace's members: name, role and when they were added, owners first."""
    with db.identity() as conn:
        return conn.execute(
            """SELECT u.name, m.role, m.added_at FROM workspace_members m JOIN users u ON u.id = m.user_id
               WHERE m.workspace_id = %s
               ORDER BY array_position(ARRAY['owner', 'member', 'reader'], m.role), u.name""",
            (workspace_id,),
        ).fetchall()


def listing(db: Database, user_id: str | None = None) -> list[Row]:
    """Every workspace (or those `user_id` belongs to, with their role): name, members, created."""
    with db.identity() as conn:
        return conn.execute(
            """SELECT w.name, w.created_at, count(m.user_id) AS members,
                      max(m.role) FILTER (WHERE m.user_id = %(user)s::uuid) AS role
               FROM users w LEFT JOIN workspace_members m ON m.workspace_id = w.id
               WHERE w.kind = 'workspace'
               GROUP BY w.id
               HAVING %(user)s::uuid IS NULL OR bool_or(m.user_id = %(user)s::uuid)
               ORDER BY w.name""",
            {"user": user_id},
        ).fetchall()


def _role(conn: Any, workspace_id: str, user_id: str) -> str | None:
    """`user_id`'s role, with every member row of the workspace locked (in one order, as the web
    path locks them: migration 0016) until the transaction ends: two owners demoting or removing
    each other at once then count owners one after the other, never both seeing two (issue 35,
    item 4: 33 of 40 concurrent demotions left no owner when only the target row was locked)."""
    rows = conn.execute(
        "SELECT user_id, role FROM workspace_members WHERE workspace_id = %s ORDER BY user_id FOR UPDATE",
        (workspace_id,),
    ).fetchall()
    return next((str(r["role"]) for r in rows if str(r["user_id"]) == str(user_id)), None)


def _keep_an_owner(conn: Any, workspace_id: str) -> None:
    owners = conn.execute(
        "SELECT count(*) AS n FROM workspace_members WHERE workspace_id = %s AND role = 'owner'",
        (workspace_id,),
    ).fetchone()
    if owners["n"] <= 1:
        raise AccountError("that is the workspace's last owner: make another member owner first")
