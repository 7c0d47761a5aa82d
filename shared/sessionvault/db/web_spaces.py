"""What the web view reads and changes of workspaces (migration 0016): the members of a
workspace its owner manages, and the open handoffs offered to a person across their spaces.
Every function is given the signed-in key's SHA-256 and answers only for the person that live
key belongs to; who owns what is decided in the database, at the moment of the statement."""

from __future__ import annotations

from typing import Any, Literal, cast

from sessionvault.db.pool import Database

Row = dict[str, Any]
Changed = Literal[
    "ok", "not_found", "role", "scope", "bad_role", "no_person", "already", "not_member", "last_owner"
]

_MEMBERS = "SELECT name, role, added_at, you FROM sessionvault_web_members(%s, %s)"
_SET = "SELECT status, was FROM sessionvault_web_set_member(%s, %s, %s, %s, %s)"
_REMOVE = "SELECT status, was FROM sessionvault_web_remove_member(%s, %s, %s)"
_OFFERS = "SELECT * FROM sessionvault_web_offers(%s, %s)"


def members(db: Database, key_hash: bytes, workspace: str) -> list[Row]:
    """The members of `workspace` (name, role, added_at, you), owners first; empty unless the
    holder of the live key `key_hash` is an owner of it."""
    return list(db.first_use(lambda conn: conn.execute(_MEMBERS, (key_hash, workspace)).fetchall()))


def set_member(
    db: Database, key_hash: bytes, workspace: str, person: str, role: str, *, add: bool
) -> tuple[Changed, str | None]:
    """Add `person` as `role` (`add`), or change a member's role: (status, their role before)."""
    params = (key_hash, workspace, person, role, add)
    return _outcome(db.first_use(lambda conn: conn.execute(_SET, params).fetchone()))


def remove_member(db: Database, key_hash: bytes, workspace: str, person: str) -> tuple[Changed, str | None]:
    """Take `person` out of `workspace`: (status, their role before)."""
    params = (key_hash, workspace, person)
    return _outcome(db.first_use(lambda conn: conn.execute(_REMOVE, params).fetchone()))


def offers(db: Database, key_hash: bytes, limit: int) -> list[Row]:
    """The open handoffs offered to the key's holder across their spaces, newest first:
    workspace ('' = personal), name, repo, version, offered_at, expires_at, to_client,
    offered_by, to_you."""
    return list(db.first_use(lambda conn: conn.execute(_OFFERS, (key_hash, limit)).fetchall()))


def _outcome(row: Row | None) -> tuple[Changed, str | None]:
    if row is None:  # the functions always answer one row; none would be a refusal too
        return "not_found", None
    return cast(Changed, row["status"]), row["was"]
