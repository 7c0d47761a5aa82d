"""Admin actions on workspaces (docs/teams.md): create one with its first owner, add, change and
remove members, list them, list workspaces, delete one (its data key first: crypto-shredding).
The same table as the user and key actions (`actions`), so the admin Lambda, `sessionvault
admin` and `sessionvault workspace` check and answer alike, and each action is audited there."""

from __future__ import annotations

from typing import Any

from sessionvault.db import identity, workspaces
from sessionvault.errors import AccountError
from sessionvault.jobs.actions import USER, Event, action, named_user, user_of
from sessionvault.runtime import Runtime
from sessionvault.service import accounts

WORKSPACE = "workspace"


def _workspace(rt: Runtime, event: Event) -> str:
    name = str(event.get(WORKSPACE, ""))
    if not name:
        raise AccountError(f"this action needs {WORKSPACE} (a workspace's name)")
    return workspaces.find(rt.db, name)


def _role(event: Event, default: str = "member") -> str:
    role = str(event.get("role") or default)
    if role not in workspaces.ROLES:
        raise AccountError(f"role must be one of {', '.join(workspaces.ROLES)}, not {role[:20]!r}")
    return role


@action(WORKSPACE, "owner")
def create_workspace(rt: Runtime, event: Event) -> dict[str, Any]:
    """A workspace and its first owner (`owner`: a user's id or name)."""
    name, owner = str(event.get(WORKSPACE, "")), str(event.get("owner", ""))
    if not name or not owner:
        raise AccountError("create_workspace needs workspace (its name) and owner (a user)")
    owner_id = identity.resolve_user(rt.db, owner)
    workspace_id = accounts.create_workspace(rt.db, rt.keys.provider, name, owner_id)
    return {"workspace_id": workspace_id, "workspace": name, "user_id": owner_id, "role": "owner"}


@action(WORKSPACE, USER, "role")
def add_member(rt: Runtime, event: Event) -> dict[str, Any]:
    """Add a user (role member unless given; an existing member gets the role given)."""
    workspace_id, user_id, role = _workspace(rt, event), user_of(rt, event), _role(event)
    before = workspaces.set_role(rt.db, workspace_id, user_id, role, add=True)
    return {"workspace": event[WORKSPACE], "user_id": user_id, "role": role, "was": before}


@action(WORKSPACE, USER, "role")
def set_member_role(rt: Runtime, event: Event) -> dict[str, Any]:
    """Change a member's role (never the last owner's to something else)."""
    if not event.get("role"):
        raise AccountError("set_member_role needs role (owner, member or reader)")
    workspace_id, user_id, role = _workspace(rt, event), user_of(rt, event), _role(event)
    before = workspaces.set_role(rt.db, workspace_id, user_id, role, add=False)
    return {"workspace": event[WORKSPACE], "user_id": user_id, "role": role, "was": before}


@action(WORKSPACE, USER)
def remove_member(rt: Runtime, event: Event) -> dict[str, Any]:
    """Take a member out: their next call into the workspace finds nothing (never the last owner)."""
    workspace_id, user_id = _workspace(rt, event), user_of(rt, event)
    before = workspaces.remove(rt.db, workspace_id, user_id)
    if before is None:
        raise AccountError("not a member of that workspace")
    return {"workspace": event[WORKSPACE], "user_id": user_id, "removed": True, "was": before}


@action(WORKSPACE)
def list_members(rt: Runtime, event: Event) -> dict[str, Any]:
    rows = workspaces.members(rt.db, _workspace(rt, event))
    return {"members": [{**r, "added_at": r["added_at"].isoformat()} for r in rows]}


@action(USER)
def list_workspaces(rt: Runtime, event: Event) -> dict[str, Any]:
    """Every workspace, or those a user belongs to (with the user's role)."""
    user_id = user_of(rt, event) if named_user(event) else None
    rows = workspaces.listing(rt.db, user_id)
    return {"workspaces": [{**r, "created_at": r["created_at"].isoformat()} for r in rows]}


@action(WORKSPACE)
def delete_workspace(rt: Runtime, event: Event) -> dict[str, Any]:
    """Destroy the workspace's data key, then its sessions, handoffs and memberships."""
    workspace_id = _workspace(rt, event)
    identity.delete_user(rt.db, workspace_id)
    return {"deleted": True, "workspace": event[WORKSPACE], "workspace_id": workspace_id}
