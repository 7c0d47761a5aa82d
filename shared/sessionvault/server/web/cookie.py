"""The web view's session cookie and its CSRF tokens. Nothing is stored on the server.

The session cookie holds the signed-in key's SHA-256 (never the key), a random session id and
an expiry, sealed with AES-256-GCM under a key derived from the server's secret salt: it can be
neither read nor changed outside the server, and any instance can open it. Every request that
carries it is admitted again by that SHA-256 through the same admission statement as /mcp, so a
revoked key (or a disabled user) ends every web session at once; otherwise a session lasts
`LIFETIME_S`. The cookie is HttpOnly, SameSite=Strict, Secure on https (and then named with the
`__Host-` prefix: no Domain, Path=/, so no other host or path can plant or read it).

CSRF: a form on a signed-in page carries an HMAC of the session id (`core.oauth.csrf_token`, the
consent page's, under a name of its own); the sign-in form, which has no session yet, one of a
random pre-sign-in value kept in a cookie of its own (so a cross-site page cannot sign a browser
in under its own key: SameSite=Strict keeps that cookie off a cross-site POST)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass

from sessionvault.core import crypto, oauth
from sessionvault.errors import DecryptionFailed

LIFETIME_S = 30 * 60  # a sign-in lasts half an hour (then sign in again)
PRE_LIFETIME_S = 15 * 60  # the sign-in form's own cookie
_AAD = b"sessionvault/web-session/v1"
_DIGEST = 32
_SID = 16
_SEALED = crypto.NONCE_BYTES + 8 + _DIGEST + _SID + crypto.TAG_BYTES
_PRE = 16


@dataclass(frozen=True)
class WebSession:
    key_hash: bytes  # SHA-256 of the API key signed in with
    sid: str  # random, per sign-in: what the CSRF tokens are bound to
    expires_at: int  # unix seconds


@dataclass(frozen=True)
class Cookies:
    """The cookie names and attributes for one server URL: `secure` on https; the `__Host-`
    names only at the root path (the prefix requires Path=/)."""

    path: str
    secure: bool

    @classmethod
    def for_base(cls, base: str) -> Cookies:
        return cls(oauth.base_path(base) or "/", base.startswith("https://"))

    @property
    def _prefix(self) -> str:
        return "__Host-" if self.secure and self.path == "/" else ""

    @property
    def session(self) -> str:
        return self._prefix + "sv_web"

    @property
    def pre(self) -> str:
        return self._prefix + "sv_web_signin"

    def set(self, name: str, value: str, max_age: int) -> str:
        attributes = f"Path={self.path}; Max-Age={max_age}; HttpOnly; SameSite=Strict"
        return f"{name}={value}; {attributes}" + ("; Secure" if self.secure else "")

    def clear(self, name: str) -> str:
        return self.set(name, "", 0)


def _key(secret: str) -> bytes:
    return hmac.new(secret.encode(), b"sessionvault/web-session", hashlib.sha256).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes | None:
    if not text or len(text) > 200 or not text.isascii():
        return None
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None


def seal(secret: str, key_hash: bytes, now: float | None = None) -> tuple[str, WebSession]:
    """A new session for the key with SHA-256 `key_hash`: (the cookie value, the session)."""
    if len(key_hash) != _DIGEST:
        raise ValueError("key_hash must be a SHA-256")
    expires = int(now if now is not None else time.time()) + LIFETIME_S
    sid = os.urandom(_SID)
    nonce, sealed = crypto.seal(_key(secret), struct.pack(">Q", expires) + key_hash + sid, _AAD)
    return _b64(nonce + sealed), WebSession(key_hash, sid.hex(), expires)


def open_session(secret: str, value: str, now: float | None = None) -> WebSession | None:
    """The session a cookie value holds, if the server sealed it and it has not expired."""
    raw = _unb64(value)
    if raw is None or len(raw) != _SEALED:
        return None
    nonce, sealed = raw[: crypto.NONCE_BYTES], raw[crypto.NONCE_BYTES :]
    try:
        plain = crypto.unseal(_key(secret), nonce, sealed, _AAD)
    except DecryptionFailed:
        return None
    (expires,) = struct.unpack(">Q", plain[:8])
    if expires <= (now if now is not None else time.time()):
        return None
    return WebSession(plain[8 : 8 + _DIGEST], plain[8 + _DIGEST :].hex(), expires)


def new_pre() -> str:
    """A fresh pre-sign-in value (its cookie and the sign-in form's CSRF token go together)."""
    return _b64(os.urandom(_PRE))


def pre_ok(value: str) -> bool:
    raw = _unb64(value)
    return raw is not None and len(raw) == _PRE


def csrf(secret: str, session: WebSession) -> str:
    return oauth.csrf_token(secret, "web-session/" + session.sid)


def csrf_ok(secret: str, session: WebSession, presented: str) -> bool:
    return oauth.csrf_ok(secret, "web-session/" + session.sid, presented)


def signin_csrf(secret: str, pre: str) -> str:
    return oauth.csrf_token(secret, "web-signin/" + pre)


def signin_csrf_ok(secret: str, pre: str, presented: str) -> bool:
    return pre_ok(pre) and oauth.csrf_ok(secret, "web-signin/" + pre, presented)


def parse_cookies(raw_headers: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Every cookie of the request (all Cookie headers: HTTP/2 may split them). A name sent twice
    keeps its first value, as browsers order the more specific cookie first."""
    found: dict[str, str] = {}
    for name, value in raw_headers:
        if name.lower() != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            key, sep, val = part.strip().partition("=")
            if sep and key and key not in found:
                found[key] = val.strip().strip('"')
    return found
