"""Bearer API key or OAuth access token -> Principal: one admission statement
(`db.admission`) looks the credential's SHA-256 up (a token must be bound to this server's
resource URL), sets the tenant, applies the rate limit and writes the audit row. The reason a
credential is refused goes to the log and the audit trail only: every refusal looks the same
outside, and names where the protected-resource metadata is (RFC 9728)."""

from __future__ import annotations

import json

from sessionvault.core import apikeys, oauth
from sessionvault.core.vault import Principal
from sessionvault.db import admission
from sessionvault.db.audit import salted_hash
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server.edge import UNAUTHORIZED
from sessionvault.telemetry import RequestLog


def refused(base: str) -> Refused:
    """The one 401 of /mcp, for every reason (`base`: this server's public URL)."""
    return Refused(401, UNAUTHORIZED, "auth", {"WWW-Authenticate": oauth.www_authenticate(base)})


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def looks_like_credential(token: str) -> bool:
    return apikeys.looks_like_key(token) or oauth.looks_like_access_token(token)


def admit(
    rt: Runtime, authorization: str | None, budget: admission.Budget, log: RequestLog, base: str
) -> Principal:
    """The caller, admitted under `budget`; raises the 401 or 429 to answer otherwise."""
    token = bearer_token(authorization)
    if token is None or not looks_like_credential(token):
        log.auth_reason = "missing" if token is None else "malformed"
        raise refused(base)
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
        resource=oauth.resource_url(base),
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
        raise refused(base)
    log.admitted = True
    credential = apikeys.display_prefix(token) if apikeys.looks_like_key(token) else "oauth"
    return Principal(result.user_id, result.wrapped_dek, result.scopes, credential)


def _rate_limited(result: admission.Admission) -> bytes:
    body = {
        "error": "rate_limited",
        "window": result.window,
        "limit": result.limit,
        "retry_after": result.retry_after_s,
    }
    return json.dumps(body).encode()
