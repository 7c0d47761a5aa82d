"""Bearer API key -> Principal, with one indexed probe on the key's SHA-256."""

from __future__ import annotations

from dataclasses import dataclass

from sessionvault import apikeys
from sessionvault.db import Database
from sessionvault.keyprovider import WrappedKey
from sessionvault.vault import Principal

_LOOKUP = """
WITH k AS (
    SELECT k.id, k.user_id, k.revoked_at, u.disabled_at, u.dek_wrapped, u.key_id
    FROM api_keys k JOIN users u ON u.id = k.user_id
    WHERE k.key_hash = %(hash)s
), touched AS (
    -- last_used_at at minute resolution: one write a minute, not one per request
    UPDATE api_keys SET last_used_at = now()
    WHERE id = (SELECT id FROM k WHERE revoked_at IS NULL AND disabled_at IS NULL)
      AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
)
SELECT * FROM k
"""


@dataclass(frozen=True)
class AuthOutcome:
    principal: Principal | None
    reason: str  # for the server-side log only: never sent to the caller


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def authenticate(db: Database, authorization: str | None) -> AuthOutcome:
    token = bearer_token(authorization)
    if token is None:
        return AuthOutcome(None, "missing")
    if not apikeys.looks_like_key(token):
        return AuthOutcome(None, "malformed")
    with db.identity() as conn:
        row = conn.execute(_LOOKUP, {"hash": apikeys.digest(token)}).fetchone()
    if row is None:
        return AuthOutcome(None, "unknown_key")
    if row["revoked_at"] is not None:
        return AuthOutcome(None, "revoked_key")
    if row["disabled_at"] is not None:
        return AuthOutcome(None, "disabled_user")
    return AuthOutcome(Principal(str(row["user_id"]), WrappedKey.from_row(row)), "ok")
