"""How a session version is sealed and opened, and how a head's plaintext columns are
authenticated. Since migration 0012 a version is sealed before its insert under a random id of
its own (`seal_id`, v2), so that a save is one flight; versions saved before keep the v1
binding to the session id and version number the database assigned. A row says which it is:
its `seal_id` is NULL for v1.

Since migration 0015 a head's preview is sealed too (`sealed_preview`, bound like its version,
under a label of its own); heads saved before keep a plaintext `preview` until the
`seal_previews` task seals it. The head's MAC covers the preview's text either way.

Since migration 0022 a head's search terms are kept as tokens keyed by the space's data key
(`terms_of`), so the database matches keywords without holding one."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from sessionvault.core import crypto, terms
from sessionvault.core.records import embedding_text
from sessionvault.db.saves import Head, Sealed
from sessionvault.errors import DecryptionFailed


def seal(dek: bytes, user_id: str, record: Mapping[str, Any], head: Head) -> Sealed:
    """`record` encrypted for a new version of the head `head`, with the head's MAC."""
    seal_id = str(uuid.uuid4())
    aad = crypto.sealed_aad(user_id, seal_id, head.name)
    nonce, ciphertext = crypto.seal(dek, json.dumps(record).encode(), aad)
    mac = crypto.sealed_meta_mac(dek, user_id, seal_id, fields_of(head))
    preview = crypto.seal_preview(dek, head.preview, crypto.preview_aad(user_id, seal_id, head.name))
    return Sealed(seal_id, nonce, ciphertext, mac, preview)


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


def preview_of(dek: bytes, user_id: str, row: Mapping[str, Any]) -> str | None:
    """A head row's preview text (row: id, name, version, seal_id, preview, sealed_preview): the
    sealed one opened, or the plaintext column of a head saved before 0015; None when the
    sealed one does not open (changed, or moved from another row)."""
    if row["sealed_preview"] is None:
        return str(row["preview"])
    try:
        return crypto.open_preview(dek, bytes(row["sealed_preview"]), preview_aad_of(user_id, row))
    except DecryptionFailed:
        return None


def seal_preview(dek: bytes, user_id: str, row: Mapping[str, Any], preview: str) -> bytes:
    """`preview` sealed for the head row `row` (id, name, version, seal_id)."""
    return crypto.seal_preview(dek, preview, preview_aad_of(user_id, row))


def preview_aad_of(user_id: str, row: Mapping[str, Any]) -> bytes:
    """What a head's preview is bound to: its version's seal_id, or (a head saved before 0012)
    the session id and head version."""
    if row["seal_id"] is not None:
        return crypto.preview_aad(user_id, str(row["seal_id"]), row["name"])
    return crypto.legacy_preview_aad(user_id, str(row["id"]), row["name"], row["version"])


MAX_TF = 32767  # the column is a smallint


def terms_of(dek: bytes, space_id: str, record: Mapping[str, Any]) -> tuple[tuple[bytes, int], ...]:
    """The record's search terms as the database keeps them: keyed tokens and counts."""
    key = crypto.term_key(dek, space_id)
    counted = terms.terms(embedding_text(record))
    return tuple((crypto.term_token(key, term), min(n, MAX_TF)) for term, n in sorted(counted.items()))


def query_tokens(dek: bytes, space_id: str, query: str) -> list[bytes]:
    """A query's terms as tokens of the space it searches."""
    key = crypto.term_key(dek, space_id)
    return [crypto.term_token(key, term) for term in sorted(terms.terms(query))]
