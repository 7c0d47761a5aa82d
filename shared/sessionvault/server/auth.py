"""Bearer API key -> Principal, with one indexed probe on the key's SHA-256. The reason a key
is refused goes to the log and the audit trail only: every refusal looks the same outside."""

from __future__ import annotations

from dataclasses import dataclass

from sessionvault.core import apikeys
from sessionvault.core.keys import WrappedKey
from sessionvault.core.vault import Principal
from sessionvault.db import identity
from sessionvault.db.pool import Database


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
    row = identity.key_owner(db, token)
    if row is None:
        return AuthOutcome(None, "unknown_key")
    if row["revoked_at"] is not None:
        return AuthOutcome(None, "revoked_key")
    if row["disabled_at"] is not None:
        return AuthOutcome(None, "disabled_user")
    return AuthOutcome(Principal(str(row["user_id"]), WrappedKey.from_row(row)), "ok")
