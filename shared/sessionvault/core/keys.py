"""Envelope encryption: per-user data keys (DEKs) wrapped by a master key (local) or by KMS."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from sessionvault.core import crypto
from sessionvault.errors import ConfigError, DecryptionFailed, ProviderUnavailable
from sessionvault.settings import is_placeholder


@dataclass(frozen=True)
class WrappedKey:
    blob: bytes
    key_id: str  # which master key or KMS key wrapped it: rotation re-wraps the others

    @classmethod
    def from_row(cls, row: Any) -> WrappedKey:
        """From a `users` row (columns dek_wrapped, key_id)."""
        return cls(bytes(row["dek_wrapped"]), row["key_id"])


class KeyProvider(Protocol):
    key_id: str

    def generate_data_key(self, user_id: str) -> tuple[bytes, WrappedKey]:
        """A fresh 32-byte DEK and its wrapped form, bound to user_id."""
        ...

    def unwrap(self, user_id: str, wrapped: WrappedKey) -> bytes:
        """The plaintext DEK; fails if the blob was wrapped for another user."""
        ...

    def wrap(self, user_id: str, dek: bytes) -> WrappedKey:
        """Wrap an existing DEK under this provider's current key (used by rotation)."""
        ...


# Exactly 32 bytes as 64 hex characters or 43 base64 characters (standard or url-safe, the
# one "=" of padding optional): a passphrase, or anything else that merely decodes, is refused.
_MASTER_KEY_FORMS = (
    (re.compile(r"[0-9a-fA-F]{64}"), bytes.fromhex),
    (re.compile(r"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=?"), lambda v: base64.b64decode(v.rstrip("=") + "=")),
    (
        re.compile(r"[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]=?"),
        lambda v: base64.urlsafe_b64decode(v.rstrip("=") + "="),
    ),
)


def parse_master_key(raw: str) -> bytes:
    """A 32-byte key given as 64 hex characters or as base64 (standard or url-safe)."""
    raw = raw.strip()
    if is_placeholder(raw):
        raise ConfigError("the master key is a placeholder (such as CHANGE_ME): generate a real one")
    for form, decode in _MASTER_KEY_FORMS:
        if form.fullmatch(raw):
            key = decode(raw)
            if len(key) == crypto.KEY_BYTES:
                return key
    raise ConfigError(
        "the master key must be exactly 32 bytes of random data, as 64 hex characters or 44 base64 characters"
        " (e.g. python3 -c 'import os, base64; print(base64.b64encode(os.urandom(32)).decode())')"
    )


def _dek_aad(user_id: str) -> bytes:
    return f"sessionvault/dek/v1\x1f{user_id}".encode()


class LocalKeyProvider:
    """Wraps DEKs with AES-256-GCM under a 32-byte master key held outside the database."""

    def __init__(self, master_key: bytes) -> None:
        if len(master_key) != crypto.KEY_BYTES:
            raise ConfigError("the master key must be exactly 32 bytes")
        self._master = master_key
        self.key_id = "local:" + hashlib.sha256(master_key).hexdigest()[:16]

    def wrap(self, user_id: str, dek: bytes) -> WrappedKey:
        nonce, ct = crypto.seal(self._master, dek, _dek_aad(user_id))
        return WrappedKey(nonce + ct, self.key_id)

    def generate_data_key(self, user_id: str) -> tuple[bytes, WrappedKey]:
        dek = os.urandom(crypto.KEY_BYTES)
        return dek, self.wrap(user_id, dek)

    def unwrap(self, user_id: str, wrapped: WrappedKey) -> bytes:
        blob = wrapped.blob
        nonce, ct = blob[: crypto.NONCE_BYTES], blob[crypto.NONCE_BYTES :]
        return crypto.unseal(self._master, nonce, ct, _dek_aad(user_id))


class KmsKeyProvider:
    """KMS GenerateDataKey / Decrypt with an encryption context naming the user."""

    def __init__(self, key_id: str, client: Any = None) -> None:
        self.key_id = key_id
        self._client = client
        self._client_lock = threading.Lock()

    @property
    def client(self) -> Any:
        """Made on the first request that needs KMS, never at init (a client made at init
        would hold the credentials of that moment: in a SnapStart snapshot, stale ones in every
        restored copy). The stdlib client (`aws_secrets.KmsClient`, one signed request a call):
        importing boto3 cost a cold Lambda's first save some 250 ms. boto3's only where boto3
        is loaded already (a process that uses it anyway; moto's in-process mock in the tests):
        not botocore, which Powertools' package imports on a Lambda's first request."""
        if self._client is None:
            with self._client_lock:  # one client, however many threads ask first
                if self._client is None:
                    if "boto3" in sys.modules:
                        import boto3  # type: ignore[import-untyped]

                        self._client = boto3.client("kms")
                    else:
                        from sessionvault.aws_secrets import KmsClient

                        self._client = KmsClient(_kms_code_failure)
        return self._client

    @staticmethod
    def prime() -> None:
        """Load the code the first KMS call runs, without reading any credentials: for a
        SnapStart before-snapshot hook (the request's modules, not boto3 any more)."""
        import hmac  # noqa: F401
        import urllib.request  # noqa: F401

        import sessionvault.aws_secrets  # noqa: F401

    @staticmethod
    def _context(user_id: str) -> dict[str, str]:
        return {"app": "sessionvault", "user_id": user_id}

    def generate_data_key(self, user_id: str) -> tuple[bytes, WrappedKey]:
        out = self.client.generate_data_key(
            KeyId=self.key_id, KeySpec="AES_256", EncryptionContext=self._context(user_id)
        )
        return bytes(out["Plaintext"]), WrappedKey(out["CiphertextBlob"], out["KeyId"])

    def unwrap(self, user_id: str, wrapped: WrappedKey) -> bytes:
        try:
            out = self.client.decrypt(
                CiphertextBlob=wrapped.blob,
                EncryptionContext=self._context(user_id),
                KeyId=wrapped.key_id,
            )
        except Exception as exc:
            raise _kms_failure(exc) from None
        return bytes(out["Plaintext"])

    def wrap(self, user_id: str, dek: bytes) -> WrappedKey:
        out = self.client.encrypt(KeyId=self.key_id, Plaintext=dek, EncryptionContext=self._context(user_id))
        return WrappedKey(out["CiphertextBlob"], out["KeyId"])


# KMS answers that mean the blob itself is wrong (tampered, another user's, another key's):
# an integrity failure. Anything else (throttling, an outage, a disabled key, no network) is
# the key service being unavailable: the caller may try again.
_KMS_INTEGRITY_CODES = {"InvalidCiphertextException", "IncorrectKeyException"}


def _kms_failure(exc: Exception) -> Exception:
    if isinstance(exc, DecryptionFailed | ProviderUnavailable):  # the stdlib client's, mapped already
        return exc
    return _kms_code_failure(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def _kms_code_failure(code: str) -> Exception:
    """The error for AWS's error `code` (or the kind of failure when AWS did not answer)."""
    if code in _KMS_INTEGRITY_CODES:
        return DecryptionFailed()
    return ProviderUnavailable("the key service (KMS) did not answer; nothing was read or written: try again")


class DekCache:
    """Unwrapped DEKs per process, bounded in size and age, so warm calls skip KMS."""

    def __init__(self, provider: KeyProvider, max_entries: int = 256, ttl_s: float = 300.0) -> None:
        self.provider = provider
        self._max = max_entries
        self._ttl = ttl_s
        self._entries: OrderedDict[tuple[str, bytes], tuple[float, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def unwrap(self, user_id: str, wrapped: WrappedKey) -> bytes:
        key = (user_id, wrapped.blob)
        now = time.monotonic()
        with self._lock:
            hit = self._entries.get(key)
            if hit and now - hit[0] < self._ttl:
                self._entries.move_to_end(key)
                return hit[1]
        dek = self.provider.unwrap(user_id, wrapped)
        with self._lock:
            self._entries[key] = (now, dek)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return dek

    def clear(self) -> None:
        """Forget every unwrapped key: the next call of each user asks the provider again."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
