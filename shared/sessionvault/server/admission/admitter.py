"""Bearer API key or OAuth access token -> Principal: one admission statement
(`db.admission`) looks the credential's SHA-256 up (a token must be bound to this server's
resource URL), sets the tenant, applies the rate limit and writes the audit row. The reason a
credential is refused goes to the log and the audit trail only: every refusal looks the same
outside, and names where the protected-resource metadata is (RFC 9728).

What an admission established (whose credential, that user's wrapped data key, the scopes) is
kept per instance (`Known`, bounded, with a TTL) so that the next tool call with the same
credential can ride on the tool's own transaction (`ride`, `db.admission.Ride`): one flight
instead of two. The cache grants nothing: every request is still admitted in SQL, and a
credential revoked a moment ago is refused by the transaction that carries its call."""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace

from sessionvault.core import apikeys, oauth
from sessionvault.db import admission
from sessionvault.db.audit import salted_hash
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server.edge import UNAUTHORIZED
from sessionvault.service.principal import Principal
from sessionvault.telemetry import RequestLog


def refused(base: str, reason: str) -> Refused:
    """The one 401 of /mcp, for every reason (`base`: this server's public URL; `reason`, for
    the log line and the audit trail only)."""
    challenge = {"WWW-Authenticate": oauth.www_authenticate(base)}
    return Refused(401, UNAUTHORIZED, "auth", challenge, auth_reason=reason)


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def looks_like_credential(token: str) -> bool:
    return apikeys.looks_like_key(token) or oauth.looks_like_access_token(token)


class Known:
    """Principals this instance admitted lately, by credential digest and resource: bounded in
    size and age (as `core.keys.DekCache`)."""

    def __init__(self, max_entries: int = 1024, ttl_s: float = 300.0) -> None:
        self._max, self._ttl = max_entries, ttl_s
        self._entries: OrderedDict[tuple[bytes, str], tuple[float, Principal]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[bytes, str]) -> Principal | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None or time.monotonic() - hit[0] >= self._ttl:
                return None
            self._entries.move_to_end(key)
            return hit[1]

    def put(self, key: tuple[bytes, str], who: Principal) -> None:
        with self._lock:
            self._entries[key] = (time.monotonic(), who)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def forget(self, key: tuple[bytes, str]) -> None:
        with self._lock:
            self._entries.pop(key, None)


@dataclass(frozen=True)
class Ride:
    """A tool call admitted on its own transaction: the Principal expected, and the admission
    that decides (after the call) whether the caller gets the tool's answer."""

    principal: Principal
    admission: admission.Ride
    token: str


class Admitter:
    """Admission for /mcp and the HTTP API, with this instance's `Known` principals."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.known = Known()

    def admit(
        self, authorization: str | None, budget: admission.Budget, log: RequestLog, base: str
    ) -> Principal:
        """The caller, admitted under `budget` in a flight of its own; raises the 401 or 429
        to answer otherwise."""
        token = bearer_token(authorization)
        if token is None or not looks_like_credential(token):
            raise refused(base, "missing" if token is None else "malformed")
        request = self._request(token, budget, log, base)
        return self._answer(token, request, admission.admit_request(self.rt.db, request), log, base)

    def ride(self, authorization: str | None, scope: str, log: RequestLog, base: str) -> Ride | None:
        """A tool call (needing `scope`) whose credential this instance admitted lately: its
        admission rides on the tool's transaction. None: admit it first (`admit`)."""
        token = bearer_token(authorization)
        if token is None or not looks_like_credential(token):
            return None
        request = self._request(token, "tool", log, base)
        who = self.known.get((request.key_hash, request.resource))
        if who is None or not set(scope.split(",")) <= who.scopes:
            return None
        ride = admission.Ride(request, who.user_id, who.wrapped_dek, scope)
        # The call's Principal carries its admission down to the transaction it opens.
        return Ride(replace(who, opening=ride.opening), ride, token)

    def settle(self, call: Ride, log: RequestLog, base: str) -> bool:
        """After the call: True when its admission admitted it (the answer may go out); False
        when the expected Principal was stale (nothing was let through: admit and run it
        again); raises the 401 or 429 otherwise. A call whose transaction never committed (it
        had none, or it failed) is admitted now, in a flight of its own: still counted and
        audited, as any call."""
        request, result = call.admission.request, call.admission.result
        if result is None:
            result = admission.admit_request(self.rt.db, request)
            if result.status == "ok" and not _as_expected(call, result):
                result = replace(result, status="stale")  # the held answer was made for another
        if result.status == "stale":
            self.known.forget((request.key_hash, request.resource))
            return False
        self._answer(call.token, request, result, log, base)
        return True

    def _answer(
        self, token: str, request: admission.Request, result: admission.Admission, log: RequestLog, base: str
    ) -> Principal:
        """The admitted Principal (remembered for the next call), or the 429 or 401 to raise."""
        known = (request.key_hash, request.resource)
        log.audit_id, log.user_id = result.audit_id, result.user_id
        if result.status == "ok" and result.user_id is not None and result.wrapped_dek is not None:
            log.admitted = True
            credential = apikeys.display_prefix(token) if apikeys.looks_like_key(token) else "oauth"
            who = Principal(result.user_id, result.wrapped_dek, result.scopes, credential, proof=result.proof)
            log.proof = result.proof
            self.known.put(known, who)
            return who
        # Forgotten when rate-limited too: while the limit lasts, a call is refused by its
        # admission alone, before the tool does any work (redaction, embedding, sealing).
        self.known.forget(known)
        if result.status == "rate_limited":
            retry = {"Retry-After": str(result.retry_after_s)}
            raise Refused(429, _rate_limited(result), "rate_limit", retry)
        raise refused(base, result.status)

    def _request(self, token: str, budget: admission.Budget, log: RequestLog, base: str) -> admission.Request:
        settings = self.rt.settings
        limits = (
            admission.Limits(settings.rate_per_minute, settings.rate_per_day)
            if budget == "tool"
            else admission.Limits(settings.protocol_rate_per_minute, 0)
        )
        return admission.Request(
            key_hash=apikeys.digest(token),
            budget=budget,
            limits=limits,
            request_id=log.request_id,
            tool=log.tool,
            ip_hash=salted_hash(log.ip, settings.audit_salt),
            ua_hash=salted_hash(log.user_agent, settings.audit_salt),
            resource=oauth.resource_url(base),
        )


def _as_expected(call: Ride, result: admission.Admission) -> bool:
    """The admitted credential is still whom the ridden call ran as."""
    who = call.principal
    return (
        result.user_id == who.user_id
        and result.wrapped_dek == who.wrapped_dek
        and set(call.admission.scope.split(",")) <= result.scopes  # a claim needs "read,write"
    )


def _rate_limited(result: admission.Admission) -> bytes:
    body = {
        "error": "rate_limited",
        "window": result.window,
        "limit": result.limit,
        "retry_after": result.retry_after_s,
    }
    return json.dumps(body).encode()
