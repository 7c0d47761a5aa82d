"""Admin actions on the identity plane, as one table of JSON-in/JSON-out actions: the admin
Lambda (IAM-invoked only), `sessionvault admin` and the CLI's `user` / `key` commands all go
through `dispatch`, so every front end checks and answers the same way."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sessionvault import telemetry
from sessionvault.core import apikeys
from sessionvault.core.keys import KmsKeyProvider
from sessionvault.db import audit, identity
from sessionvault.errors import AccountError, ErrorClass
from sessionvault.jobs import rekey, rotation
from sessionvault.runtime import Runtime

Event = dict[str, Any]


def _user(rt: Runtime, event: Event) -> str:
    ref = event.get("user_id") or event.get("user")
    if not ref:
        raise AccountError("this action needs user_id (a user's id or name)")
    return identity.resolve_user(rt.db, str(ref))


def create_user(rt: Runtime, event: Event) -> dict[str, Any]:
    if not event.get("name"):
        raise AccountError("create_user needs name")
    return {"user_id": identity.create_user(rt.db, rt.keys.provider, str(event["name"]))}


def create_key(rt: Runtime, event: Event) -> dict[str, Any]:
    user_id, scopes = _user(rt, event), apikeys.parse_scopes(str(event.get("scopes", "")))
    key, prefix = identity.create_key(rt.db, user_id, str(event.get("label", "")), scopes)
    return {
        "key": key,
        "prefix": prefix,
        "scopes": list(scopes),
        "user_id": user_id,
        "note": "shown once: store it now",
    }


def list_keys(rt: Runtime, event: Event) -> dict[str, Any]:
    user = _user(rt, event) if (event.get("user_id") or event.get("user")) else None
    rows = identity.list_keys(rt.db, user)
    stamp = ("created_at", "last_used_at", "revoked_at")
    keys = [{k: (v.isoformat() if k in stamp and v else v) for k, v in r.items()} for r in rows]
    return {"keys": keys}


def revoke_key(rt: Runtime, event: Event) -> dict[str, Any]:
    user = _user(rt, event) if (event.get("user_id") or event.get("user")) else None
    named = str(event.get("prefix", ""))
    revoked = identity.revoke_key(rt.db, named, user)
    return {"revoked": revoked, "prefix": apikeys.display_prefix(named), "user_id": user}


def disable_user(rt: Runtime, event: Event) -> dict[str, Any]:
    user_id = _user(rt, event)
    identity.disable_user(rt.db, user_id)
    return {"disabled": True, "user_id": user_id}


def delete_user(rt: Runtime, event: Event) -> dict[str, Any]:
    user_id = _user(rt, event)
    identity.delete_user(rt.db, user_id)
    return {"deleted": True, "user_id": user_id}


def rotate_keys(rt: Runtime, event: Event) -> dict[str, Any]:
    """Re-wrap every DEK under the configured KMS key (after pointing the stack at a new key)."""
    target = rt.keys.provider
    if not isinstance(target, KmsKeyProvider):
        raise AccountError("local mode: use `sessionvault rotate-master-key`")
    return rotation.rewrap_all(rt.db, target, lambda key_id: KmsKeyProvider(key_id, target.client))


def rekey_users(rt: Runtime, event: Event) -> dict[str, Any]:
    """Fresh data keys, sessions re-encrypted (after a suspected compromise): one user, or all
    users keyed before `before` (default: now; pass the answer's `before` again to resume)."""
    if event.get("user_id") or event.get("user"):
        user_id = _user(rt, event)
        return {"user_id": user_id, "reencrypted_versions": rekey.rekey_user(rt, user_id)}
    try:
        before = datetime.fromisoformat(str(event["before"])) if event.get("before") else datetime.now(UTC)
    except ValueError:
        raise AccountError("before must be an ISO timestamp, as a previous run answered") from None
    return {"before": before.isoformat(), **rekey.rekey_all(rt, before)}


ACTIONS: dict[str, Callable[[Runtime, Event], dict[str, Any]]] = {
    f.__name__: f
    for f in (
        create_user,
        create_key,
        list_keys,
        revoke_key,
        disable_user,
        delete_user,
        rotate_keys,
        rekey_users,
    )
}


def dispatch(rt: Runtime, event: Event, request_id: str = "") -> dict[str, Any]:
    """Run one action; every action, refused or not, leaves one log line and one audit row
    (action, target user, key prefix, request id; never a key)."""
    name = str(event.get("action", ""))
    action = ACTIONS.get(name)
    if action is None:
        answer = {"ok": False, "error": f"unknown action; one of: {', '.join(ACTIONS)}"}
        _record(rt, "unknown", answer, request_id)  # the name is the caller's text: not recorded
        return answer
    try:
        answer = {"ok": True, **action(rt, event)}
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
