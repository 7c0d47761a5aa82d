"""How a session version is sealed and opened, and how a head's plaintext columns are
authenticated. Since migration 0012 a version is sealed before its insert under a random id of
its own (`seal_id`, v2), so that a save is one flight; versions saved before keep the v1
binding to the session id and version number the database assigned. A row says which it is:
its `seal_id` is NULL for v1."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from sessionvault.core import crypto
from sessionvault.db.saves import Head, Sealed


def seal(dek: bytes, user_id: str, record: Mapping[str, Any], head: Head) -> Sealed:
    """`record` encrypted for a new version of the head `head`, with the head's MAC."""
    seal_id = str(uuid.uuid4())
    aad = crypto.sealed_aad(user_id, seal_id, head.name)
    nonce, ciphertext = crypto.seal(dek, json.dumps(record).encode(), aad)
    return Sealed(seal_id, nonce, ciphertext, crypto.sealed_meta_mac(dek, user_id, seal_id, fields_of(head)))


def open_record(dek: bytes, user_id: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """Decrypt a stored version; `row` has id (the session's), name, version, seal_id, nonce
    and ciphertext."""
    record: dict[str, Any] = json.loads(
        crypto.unseal(dek, row["nonce"], row["ciphertext"], aad_of(user_id, row))
    )
    return record


def aad_of(user_id: str, row: Mapping[str, Any]) -> bytes:
    """The associated data a stored version was sealed with (v2, or v1 when it has no seal_id)."""
    if row["seal_id"] is not None:
        return crypto.sealed_aad(user_id, str(row["seal_id"]), row["name"])
    return crypto.session_aad(user_id, str(row["id"]), row["name"], row["version"])


def head_mac(dek: bytes, user_id: str, row: Mapping[str, Any], head: Head) -> bytes:
    """The MAC a head row (id, version, seal_id) with the plaintext columns `head` should carry."""
    if row["seal_id"] is not None:
        return crypto.sealed_meta_mac(dek, user_id, str(row["seal_id"]), fields_of(head))
    return crypto.meta_mac(dek, user_id, str(row["id"]), row["version"], fields_of(head))


def fields_of(head: Head) -> tuple[str, ...]:
    return (head.name, head.repo, head.client, head.preview)
