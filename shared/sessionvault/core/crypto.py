"""AES-256-GCM with associated data: 12-byte random nonce, 16-byte tag appended to the ciphertext."""

from __future__ import annotations

import hashlib
import hmac
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from sessionvault.errors import DecryptionFailed

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16


def seal(key: bytes, plaintext: bytes, associated_data: bytes) -> tuple[bytes, bytes]:
    """Encrypt; returns (nonce, ciphertext || tag)."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce, AESGCM(key).encrypt(nonce, plaintext, associated_data)


def unseal(key: bytes, nonce: bytes, ciphertext: bytes, associated_data: bytes) -> bytes:
    """Decrypt and authenticate; any tampering (or the wrong row's data) raises DecryptionFailed."""
    try:
        return AESGCM(key).decrypt(nonce, ciphertext, associated_data)
    except (InvalidTag, ValueError):
        raise DecryptionFailed() from None


def fingerprint(key: bytes) -> bytes:
    """Which key, without the key: SHA-256 of 32 random bytes reveals nothing usable."""
    return hashlib.sha256(b"sessionvault/key-fingerprint/v1\x1f" + key).digest()


def meta_mac(dek: bytes, user_id: str, session_id: str, version: int, fields: tuple[str, ...]) -> bytes:
    """Authenticates a session's plaintext columns (name, repo, client, preview) for listings
    that do not decrypt: a key derived from the DEK, the row's identity and the values. (v1:
    heads saved before migration 0012; `sealed_meta_mac` since.)"""
    key = hashlib.sha256(b"sessionvault/meta/v1\x1f" + dek).digest()
    message = "\x1f".join((user_id, session_id, str(version), *fields)).encode()
    return hmac.new(key, message, hashlib.sha256).digest()


def sealed_meta_mac(dek: bytes, user_id: str, seal_id: str, fields: tuple[str, ...]) -> bytes:
    """`meta_mac` for a head whose version was sealed under its own `seal_id` (v2)."""
    key = hashlib.sha256(b"sessionvault/meta/v2\x1f" + dek).digest()
    message = "\x1f".join((user_id, seal_id, *fields)).encode()
    return hmac.new(key, message, hashlib.sha256).digest()


def content_digest(dek: bytes, user_id: str, record: bytes) -> bytes:
    """Which content a head holds, comparable without decrypting: keyed by the DEK, so equal
    digests say nothing to anyone without the user's key."""
    key = hashlib.sha256(b"sessionvault/content/v1\x1f" + dek).digest()
    return hmac.new(key, user_id.encode() + b"\x1f" + record, hashlib.sha256).digest()


def session_aad(user_id: str, session_id: str, name: str, version: int) -> bytes:
    """Binds a ciphertext to its row: another user, session, name or version will not open it
    (the session id also tells a deleted-and-recreated name from the old one). v1: versions
    saved before migration 0012."""
    return f"sessionvault/session/v1\x1f{user_id}\x1f{session_id}\x1f{name}\x1f{version}".encode()


def sealed_aad(user_id: str, seal_id: str, name: str) -> bytes:
    """v2: binds a ciphertext to its version's own random id (drawn before the insert, so a
    save is one flight), its user and its name: it opens in no other row, user or name."""
    return f"sessionvault/session/v2\x1f{user_id}\x1f{seal_id}\x1f{name}".encode()


def preview_aad(user_id: str, seal_id: str, name: str) -> bytes:
    """A head's sealed preview (migration 0015): bound as `sealed_aad` binds its version (user,
    seal_id, name), under a label of its own, so a preview never opens as a record, nor a record
    as a preview."""
    return f"sessionvault/preview/v2\x1f{user_id}\x1f{seal_id}\x1f{name}".encode()


def legacy_preview_aad(user_id: str, session_id: str, name: str, version: int) -> bytes:
    """`preview_aad` for a head saved before migration 0012 (it has no seal_id), sealed later by
    the `seal_previews` task: bound to the session id and head version, as `session_aad` binds
    that head's record."""
    return f"sessionvault/preview/v1\x1f{user_id}\x1f{session_id}\x1f{name}\x1f{version}".encode()


def seal_blob(key: bytes, plaintext: bytes, associated_data: bytes) -> bytes:
    """Bytes sealed into one value, nonce || ciphertext || tag (one column, not two)."""
    nonce, ciphertext = seal(key, plaintext, associated_data)
    return nonce + ciphertext


def open_blob(key: bytes, sealed: bytes, associated_data: bytes) -> bytes:
    """The bytes `seal_blob` sealed; DecryptionFailed if they were changed or moved."""
    if len(sealed) < NONCE_BYTES + TAG_BYTES:
        raise DecryptionFailed()
    return unseal(key, sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], associated_data)


def seal_preview(key: bytes, preview: str, associated_data: bytes) -> bytes:
    """A short text sealed into one value (a listing reads 200 of them: one column each)."""
    return seal_blob(key, preview.encode(), associated_data)


def open_preview(key: bytes, sealed: bytes, associated_data: bytes) -> str:
    """The text `seal_preview` sealed; DecryptionFailed if it was changed or moved."""
    return open_blob(key, sealed, associated_data).decode()


def term_key(dek: bytes, space_id: str) -> bytes:
    """The key a space's search terms are tokenised under: derived from its data key and bound
    to the space, so equal terms in two spaces give unrelated tokens, and a re-key changes them."""
    return hmac.new(dek, b"sessionvault/terms/v1\x1f" + space_id.encode(), hashlib.sha256).digest()


def term_token(key: bytes, term: str) -> bytes:
    """A term as the database stores and matches it: 16 bytes of HMAC-SHA256 (a collision
    among a space's terms is a 2^-64 chance), nothing of the term without the key."""
    return hmac.new(key, term.encode(), hashlib.sha256).digest()[:16]


def vector_aad(space_id: str, binding: str, model: str) -> bytes:
    """A head's sealed vector is bound to its space, its version (the version's `seal_id`, or
    `<session id>:<version>` for versions sealed before there were seal ids) and its model:
    moved to another row, space or model, it does not open."""
    return "\x1f".join(("sessionvault/vector/v1", space_id, binding, model)).encode()


def segment_aad(space_id: str, segment_id: str, model: str) -> bytes:
    """A segment of a space's vectors is bound to the space, its own id and the model."""
    return "\x1f".join(("sessionvault/vectors/v1", space_id, segment_id, model)).encode()
