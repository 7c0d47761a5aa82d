"""Making users and keys: a user's data key drawn and wrapped by the key provider, an API key
drawn and stored only as its SHA-256, a key revoked by the whole key or its prefix. The rows
themselves are `db.identity`'s; the keys are made here, never in the data layer."""

from __future__ import annotations

import uuid

from sessionvault.core import apikeys, tenant_names
from sessionvault.core.keys import KeyProvider
from sessionvault.db import identity, workspaces
from sessionvault.db.pool import Database
from sessionvault.errors import AccountError


def create_user(db: Database, provider: KeyProvider, name: str) -> str:
    """A new user named `name`, with a fresh data key wrapped by `provider`: their id."""
    if identity.is_uuid(name):  # a name that reads as an id would make lookups ambiguous
        raise AccountError("a user name cannot be a UUID; pick a name such as alice")
    name = _checked(name, "user")
    user_id = str(uuid.uuid4())
    _dek, wrapped = provider.generate_data_key(user_id)
    identity.insert_user(db, user_id, name, wrapped)
    return user_id


def create_key(
    db: Database, user_id: str, label: str = "", scopes: tuple[str, ...] = apikeys.DEFAULT_SCOPES
) -> tuple[str, str]:
    """A new key for the user: (the key, shown once; its display prefix)."""
    key = apikeys.generate()
    identity.insert_key(db, user_id, apikeys.digest(key), apikeys.display_prefix(key), label, scopes)
    return key, apikeys.display_prefix(key)


def revoke_key(db: Database, key_or_prefix: str, user_id: str | None = None) -> int:
    """Revoke one live key, named by the whole key or its 12-character prefix (optionally
    within one user). A prefix is only 24 random bits: if it matches several keys, nothing is
    revoked and the caller is asked to be precise. Returns how many were revoked (0 or 1)."""
    shown = key_or_prefix[: apikeys.PREFIX_CHARS]
    if apikeys.looks_like_key(key_or_prefix):
        return identity.revoke_matching(db, "key_hash", apikeys.digest(key_or_prefix), user_id, shown)
    if len(key_or_prefix) >= apikeys.PREFIX_CHARS:
        return identity.revoke_matching(db, "key_prefix", shown, user_id, shown)
    raise AccountError("give the key or its first 12 characters, e.g. sv_live_a1b2")


def create_workspace(db: Database, provider: KeyProvider, name: str, owner_id: str) -> str:
    """A new workspace named `name`, with a data key of its own wrapped by `provider` (bound to
    the workspace's id) and `owner_id` as its first owner: its id."""
    if identity.is_uuid(name):
        raise AccountError("a workspace name cannot be a UUID; pick a name such as platform-team")
    name = _checked(name, "workspace")
    workspace_id = str(uuid.uuid4())
    _dek, wrapped = provider.generate_data_key(workspace_id)
    workspaces.create(db, workspace_id, name, wrapped, owner_id)
    return workspace_id


def _checked(name: str, what: str) -> str:
    """`name` in its canonical form, or AccountError saying why the rule refuses it
    (core/tenant_names.py; uniqueness regardless of case is checked where the row is written)."""
    why = tenant_names.problem(name)
    if why:
        raise AccountError(f"{what} name {name!r} refused: {why}")
    return tenant_names.canonical(name)
