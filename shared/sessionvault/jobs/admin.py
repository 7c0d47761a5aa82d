"""Admin actions on the identity plane, as one table of JSON-in/JSON-out actions: the admin
Lambda (IAM-invoked only), `sessionvault admin` and the CLI's `user` / `key` commands all go
through `dispatch`, so every front end checks and answers the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sessionvault.core.keys import KmsKeyProvider
from sessionvault.db import identity
from sessionvault.errors import AccountError
from sessionvault.jobs import rotation
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
    key, prefix = identity.create_key(rt.db, _user(rt, event), str(event.get("label", "")))
    return {"key": key, "prefix": prefix, "note": "shown once: store it now"}


def list_keys(rt: Runtime, event: Event) -> dict[str, Any]:
    user = _user(rt, event) if (event.get("user_id") or event.get("user")) else None
    rows = identity.list_keys(rt.db, user)
    stamp = ("created_at", "last_used_at", "revoked_at")
    keys = [{k: (v.isoformat() if k in stamp and v else v) for k, v in r.items()} for r in rows]
    return {"keys": keys}


def revoke_key(rt: Runtime, event: Event) -> dict[str, Any]:
    user = _user(rt, event) if (event.get("user_id") or event.get("user")) else None
    return {"revoked": identity.revoke_key(rt.db, str(event.get("prefix", "")), user)}


def disable_user(rt: Runtime, event: Event) -> dict[str, Any]:
    identity.disable_user(rt.db, _user(rt, event))
    return {"disabled": True}


def delete_user(rt: Runtime, event: Event) -> dict[str, Any]:
    identity.delete_user(rt.db, _user(rt, event))
    return {"deleted": True}


def rotate_keys(rt: Runtime, event: Event) -> dict[str, Any]:
    """Re-wrap every DEK under the configured KMS key (after pointing the stack at a new key)."""
    target = rt.keys.provider
    if not isinstance(target, KmsKeyProvider):
        raise AccountError("local mode: use `sessionvault rotate-master-key`")
    return rotation.rewrap_all(rt.db, target, lambda key_id: KmsKeyProvider(key_id, target.client))


ACTIONS: dict[str, Callable[[Runtime, Event], dict[str, Any]]] = {
    f.__name__: f
    for f in (create_user, create_key, list_keys, revoke_key, disable_user, delete_user, rotate_keys)
}


def dispatch(rt: Runtime, event: Event) -> dict[str, Any]:
    action = ACTIONS.get(str(event.get("action", "")))
    if action is None:
        return {"ok": False, "error": f"unknown action; one of: {', '.join(ACTIONS)}"}
    try:
        return {"ok": True, **action(rt, event)}
    except AccountError as exc:
        return {"ok": False, "error": str(exc)}
