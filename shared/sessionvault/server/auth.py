"""Bearer API key -> Principal: one admission statement (`db.admission`) looks the key's
SHA-256 up, sets the tenant, applies the rate limit and writes the audit row. The reason a key
is refused goes to the log and the audit trail only: every refusal looks the same outside."""

from __future__ import annotations

import json

from sessionvault.core import apikeys
from sessionvault.core.vault import Principal
from sessionvault.db import admission
from sessionvault.db.audit import salted_hash
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server.edge import UNAUTHORIZED
from sessionvault.telemetry import RequestLog


def _refused() -> Refused:
    return Refused(401, UNAUTHORIZED, "auth", {"WWW-Authenticate": "Bearer"})


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def admit(rt: Runtime, authorization: str | None, budget: admission.Budget, log: RequestLog) -> Principal:
    """The caller, admitted under `budget`; raises the 401 or 429 to answer otherwise."""
    token = bearer_token(authorization)
    if token is None or not apikeys.looks_like_key(token):
        log.auth_reason = "missing" if token is None else "malformed"
        raise _refused()
    settings = rt.settings
    limits = (
        admission.Limits(settings.rate_per_minute, settings.rate_per_day)
        if budget == "tool"
        else admission.Limits(settings.protocol_rate_per_minute, 0)
    )
    result = admission.admit(
        rt.db,
        apikeys.digest(token),
        budget,
        limits,
        request_id=log.request_id,
        tool=log.tool,
        ip_hash=salted_hash(log.ip, settings.audit_salt),
        ua_hash=salted_hash(log.user_agent, settings.audit_salt),
    )
    log.audit_id, log.user_id = result.audit_id, result.user_id
    if result.status == "rate_limited":
        raise Refused(429, _rate_limited(result), "rate_limit", {"Retry-After": str(result.retry_after_s)})
    if result.status != "ok" or result.user_id is None or result.wrapped_dek is None:
        log.auth_reason = result.status
        raise _refused()
    log.admitted = True
    return Principal(result.user_id, result.wrapped_dek, result.scopes)


def _rate_limited(result: admission.Admission) -> bytes:
    body = {
        "error": "rate_limited",
        "window": result.window,
        "limit": result.limit,
        "retry_after": result.retry_after_s,
    }
    return json.dumps(body).encode()
