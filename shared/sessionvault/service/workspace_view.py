"""Workspaces as the web view shows them (docs/web.md): the spaces a person may switch between,
a session's versions in one of them, the members page of a workspace they own (see, add,
change a role, remove), and the open handoffs offered to them across every space.

Who asks is the signed-in key (its SHA-256), never a form field: the database decides at the
moment of each statement whether that key's holder owns the workspace named (migration 0016),
so an owner of one workspace cannot touch another by editing a form. A workspace the caller
does not belong to reads exactly as one that does not exist."""

from __future__ import annotations

from typing import Any

from sessionvault.core.apikeys import scope_hint
from sessionvault.db import web_spaces as store
from sessionvault.db.pool import Database
from sessionvault.errors import ScopeMissing, ValidationFailed, VaultError, WorkspaceDenied
from sessionvault.service import portability
from sessionvault.service.principal import Principal
from sessionvault.service.spaces import Spaces
from sessionvault.service.vault import Vault

Row = dict[str, Any]
ROLES = ("owner", "member", "reader")
ACTIONS = ("add", "role", "remove")
CHANGE_SCOPE = "delete"  # who may read a workspace cannot be taken back once they read: docs/web.md
NAME_CHARS = 200


def spaces(all_spaces: Spaces, who: Principal) -> list[dict[str, str]]:
    """The workspaces the caller belongs to (name, role), by name; the personal space is theirs."""
    return all_spaces.mine(who)


def session_versions(vault: Vault, who: Principal, name: str, workspace: str) -> dict[str, Any]:
    """Every kept version of session `name`, as the export reads them, in the caller's personal
    space or `workspace`: there the workspace's tenant and data key stand in for the caller's,
    inside an entry that checks the caller's membership at that moment (as every tool's)."""
    return portability.export_session(vault, who, name, workspace)


def role_in(all_spaces: Spaces, who: Principal, workspace: str) -> str:
    """The caller's role in `workspace`, or the refusal a non-member (or nobody) gets."""
    role = next((s["role"] for s in spaces(all_spaces, who) if s["name"] == workspace), None)
    if role is None:
        raise not_yours(workspace)
    return role


def members(db: Database, all_spaces: Spaces, who: Principal, key_hash: bytes, workspace: str) -> list[Row]:
    """The members of `workspace` for its owner (name, role, added_at, you), owners first."""
    role = role_in(all_spaces, who, workspace)
    if role != "owner":
        raise _owners_only(workspace, role)
    rows = store.members(db, key_hash, workspace)
    if not rows:  # a workspace always has an owner: the database refused (demoted meanwhile?)
        raise _owners_only(workspace, role)
    return rows


def check_change(action: str, person: str, role: str) -> None:
    """A change's fields, checked before anything is asked or done."""
    if action not in ACTIONS:
        raise ValidationFailed("invalid form: action must be add, role or remove")
    if not person.strip() or len(person) > NAME_CHARS:
        raise ValidationFailed("invalid form: give the person's user name")
    if action != "remove" and role not in ROLES:
        raise ValidationFailed(f"invalid form: role must be one of {', '.join(ROLES)}")


def change(
    db: Database, who: Principal, key_hash: bytes, workspace: str, action: str, person: str, role: str
) -> str | None:
    """Add `person` as `role`, change their role, or remove them (`action`); the role they had
    before. Refused unless the key's holder owns `workspace` and the key has delete."""
    check_change(action, person, role)
    if CHANGE_SCOPE not in who.scopes:  # the database checks it again
        raise scope_missing(who)
    if action == "remove":
        status, was = store.remove_member(db, key_hash, workspace, person)
    else:
        status, was = store.set_member(db, key_hash, workspace, person, role, add=action == "add")
    if status == "ok":
        return was
    raise _refusal(status, was, who, workspace, person)


def offers_to_me(db: Database, key_hash: bytes, limit: int = 100) -> list[Row]:
    """The open handoffs offered to the key's holder across their spaces, newest first."""
    return store.offers(db, key_hash, limit)


def not_yours(workspace: str) -> WorkspaceDenied:
    return WorkspaceDenied(
        None, f"no workspace named {workspace!r} that you belong to (the Workspaces page lists yours)"
    )


def _owners_only(workspace: str, role: str) -> WorkspaceDenied:
    said = f"your role in workspace {workspace!r} is {role}: only its owners manage its members"
    return WorkspaceDenied(f"denied:{role}", said)


def scope_missing(who: Principal) -> ScopeMissing:
    return ScopeMissing(scope_hint(CHANGE_SCOPE, "changing a workspace's members", who.scopes))


def _refusal(status: str, was: str | None, who: Principal, workspace: str, person: str) -> VaultError:
    if status == "not_found":
        return not_yours(workspace)
    if status == "role":
        return _owners_only(workspace, was or "no longer owner")
    if status == "scope":
        return scope_missing(who)
    texts = {
        "bad_role": f"role must be one of {', '.join(ROLES)}",
        "no_person": f"no person named {person!r} (a user name, as `sessionvault user list` shows it)",
        "already": f"{person} is already {was} of {workspace}: change their role instead",
        "not_member": f"{person} is not a member of {workspace}",
        "last_owner": f"{person} is the last owner of {workspace}: make another member owner first",
    }
    return ValidationFailed(texts.get(status, f"the change was refused ({status})"))
