"""Admin actions on the identity plane, as one table of JSON-in/JSON-out actions: the admin
Lambda (IAM-invoked only), `sessionvault admin` and the CLI's `user` / `key` commands all go
through `dispatch`, so every front end checks and answers the same way.

Each action declares the event keys it reads; any other key is refused before it runs, so a
misspelt parameter (`scope` for `scopes`) is an error, never a silent default."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sessionvault import telemetry
from sessionvault.core import apikeys, tenant_names
from sessionvault.core.keys import KmsKeyProvider
from sessionvault.db import audit, identity, workspaces
from sessionvault.errors import AccountError, ErrorClass
from sessionvault.jobs import rekey, rotation
from sessionvault.jobs.actions import (
    ACTIONS,
    USER,
    Event,
    action,
    check_parameters,
    named_user,
    unknown_action,
    user_of,
)
from sessionvault.runtime import Runtime
from sessionvault.service import accounts


def _scopes(value: Any) -> str:
    """Scopes as "read,write" or, as list_keys answers them, ["read", "write"]."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    return str(value or "")


def _stamps(row: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: (v.isoformat() if k in names and v else v) for k, v in row.items()}


@action("name")
def create_user(rt: Runtime, event: Event) -> dict[str, Any]:
    if not event.get("name"):
        raise AccountError("create_user needs name")
    return {"user_id": accounts.create_user(rt.db, rt.keys.provider, str(event["name"]))}


@action()
def list_users(rt: Runtime, event: Event) -> dict[str, Any]:
    """Every user: id, name, state (active or disabled), when, how many unrevoked keys, and
    `name_problem` when a name made before the naming rule breaks it (reported, not changed)."""
    rows = identity.list_users(rt.db)
    users = [
        {**_stamps(r, "created_at", "disabled_at"), "state": "disabled" if r["disabled_at"] else "active"}
        for r in rows
    ]
    for user, why in zip(users, tenant_names.problems([r["name"] for r in rows]), strict=True):
        if why:
            user["name_problem"] = why
    return {"users": users}


@action(USER, "label", "scopes")
def create_key(rt: Runtime, event: Event) -> dict[str, Any]:
    user_id, scopes = user_of(rt, event), apikeys.parse_scopes(_scopes(event.get("scopes")))
    key, prefix = accounts.create_key(rt.db, user_id, str(event.get("label", "")), scopes)
    return {
        "key": key,
        "prefix": prefix,
        "scopes": list(scopes),
        "user_id": user_id,
        "note": "shown once: store it now",
    }


def key_state(row: dict[str, Any]) -> str:
    """What a key can do now: revoked (for good), disabled (its user is), or active."""
    if row["revoked_at"]:
        return "revoked"
    return "disabled" if row["user_disabled_at"] else "active"


@action(USER)
def list_keys(rt: Runtime, event: Event) -> dict[str, Any]:
    user = user_of(rt, event) if named_user(event) else None
    rows = identity.list_keys(rt.db, user)
    stamps = ("created_at", "last_used_at", "revoked_at", "user_disabled_at")
    return {"keys": [{**_stamps(r, *stamps), "state": key_state(r)} for r in rows]}


@action("prefix", USER)
def revoke_key(rt: Runtime, event: Event) -> dict[str, Any]:
    user = user_of(rt, event) if named_user(event) else None
    named = str(event.get("prefix", ""))
    revoked = accounts.revoke_key(rt.db, named, user)
    return {"revoked": revoked, "prefix": apikeys.display_prefix(named), "user_id": user}


@action(USER)
def disable_user(rt: Runtime, event: Event) -> dict[str, Any]:
    user_id = user_of(rt, event)
    identity.disable_user(rt.db, user_id)
    return {"disabled": True, "user_id": user_id}


@action(USER)
def enable_user(rt: Runtime, event: Event) -> dict[str, Any]:
    """Undo disable_user: the user's unrevoked keys (and OAuth tokens still in date) work again."""
    user_id = user_of(rt, event)
    identity.enable_user(rt.db, user_id)
    return {"enabled": True, "user_id": user_id}


@action(USER)
def delete_user(rt: Runtime, event: Event) -> dict[str, Any]:
    user_id = user_of(rt, event)
    identity.delete_user(rt.db, user_id)
    return {"deleted": True, "user_id": user_id}


@action()
def rotate_proof_key(rt: Runtime, event: Event) -> dict[str, Any]:
    """A new key for the tenant proofs the database mints and verifies (docs/security.md); the
    old one keeps verifying proofs already made for 2 minutes, so no call fails."""
    return {"proof_key_id": identity.rotate_proof_key(rt.db)}


@action()
def rotate_keys(rt: Runtime, event: Event) -> dict[str, Any]:
    """Re-wrap every DEK under the configured KMS key (after pointing the stack at a new key)."""
    target = rt.keys.provider
    if not isinstance(target, KmsKeyProvider):
        raise AccountError("local mode: use `sessionvault rotate-master-key`")
    return rotation.rewrap_all(rt.db, target, lambda key_id: KmsKeyProvider(key_id, target.client))


@action(USER, "before", "workspace")
def rekey_users(rt: Runtime, event: Event) -> dict[str, Any]:
    """Fresh data keys, sessions re-encrypted (after a suspected compromise, or a member's
    removal): one user, one workspace (by name or id; `user=<workspace id>` too, as docs/teams.md
    long said), or all users keyed before `before` (default: now; pass the answer's `before`
    again to resume). Members' next calls use the new key (service/spaces.py follows it)."""
    if event.get("workspace") or named_user(event):
        tenant = _tenant(rt, event)
        return {"user_id": tenant, "reencrypted_versions": rekey.rekey_user(rt, tenant)}
    try:
        before = datetime.fromisoformat(str(event["before"])) if event.get("before") else datetime.now(UTC)
    except ValueError:
        raise AccountError("before must be an ISO timestamp, as a previous run answered") from None
    return {"before": before.isoformat(), **rekey.rekey_all(rt, before)}


def _tenant(rt: Runtime, event: Event) -> str:
    """The one tenant a rekey names: `workspace` (name or id), else `user` (a person's id or
    name, or a workspace's id)."""
    if event.get("workspace"):
        return workspaces.find(rt.db, str(event["workspace"]))
    try:
        return user_of(rt, event)
    except AccountError:
        if not identity.is_uuid(named_user(event)):
            raise
        return workspaces.find(rt.db, named_user(event))


def dispatch(rt: Runtime, event: Event, request_id: str = "") -> dict[str, Any]:
    """Run one action; every action, refused or not, leaves one log line and one audit row
    (action, target user, key prefix, request id; never a key)."""
    name = str(event.get("action", ""))
    found = ACTIONS.get(name)
    if found is None:
        answer = {"ok": False, "error": unknown_action()}
        _record(rt, "unknown", answer, request_id)  # the name is the caller's text: not recorded
        return answer
    try:
        check_parameters(event)
        answer = {"ok": True, **found.run(rt, event)}
    except AccountError as exc:
        answer = {"ok": False, "error": str(exc)}
    except Exception:
        _record(rt, name, {"ok": False}, request_id, "internal")
        raise
    _record(rt, name, answer, request_id)
    return answer


def _record(
    rt: Runtime, action: str, answer: dict[str, Any], request_id: str, failed_as: ErrorClass = "validation"
) -> None:
    user_id, prefix = answer.get("user_id"), answer.get("prefix")
    error_class: ErrorClass | None = None if answer["ok"] else failed_as
    fields = {"action": action, "target_user_id": user_id, "key_prefix": prefix, "request_id": request_id}
    telemetry.logger().info("admin action", extra={**fields, "ok": answer["ok"]})
    audit.admin_action(rt.db, f"admin:{action}", user_id, prefix, request_id, error_class)


# The workspace actions register after the ones above, so a caller sees them listed last.
from sessionvault.jobs import workspace_admin as workspace_admin  # noqa: E402
