"""The HTTP app: body cap -> JSON -> API key -> rate limit -> MCP tool -> audit + log line.

A plain ASGI callable with no lifespan: the MCP session manager is created per request (it is
stateless and cheap), which is what makes the same app correct under uvicorn and under Mangum,
where a lifespan would run on every invocation."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import anyio.to_thread
import psycopg
import psycopg_pool
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

from sessionvault import audit, auth, ratelimit, telemetry
from sessionvault.errors import ErrorClass
from sessionvault.runtime import Runtime
from sessionvault.tools import TOOLS, CallState, build_server, current_call
from sessionvault.vault import Principal

UNAUTHORIZED = json.dumps({"error": "unauthorized"}).encode()
UNAVAILABLE = json.dumps({"error": "temporarily unavailable, try again"}).encode()
DB_ERRORS = (psycopg.Error, psycopg_pool.PoolTimeout)
# What the log, the audit row and the metric dimension may name: never free text from a caller.
KNOWN_METHODS = {spec.name for spec in TOOLS} | {
    "initialize",
    "notifications/initialized",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
}


class Refused(Exception):
    """The request ends here with this status, body and error class."""

    def __init__(
        self, status: int, body: bytes, error_class: ErrorClass, headers: dict[str, str] | None = None
    ):
        self.status, self.body, self.error_class, self.headers = status, body, error_class, headers


async def respond(send: Send, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def jsonrpc_error(code: int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()


def method_of(payload: Any) -> str:
    """The tool or JSON-RPC method, if it is one we know; otherwise "other"."""
    if not isinstance(payload, dict):
        return "batch" if isinstance(payload, list) else "other"
    method = payload.get("method")
    if method == "tools/call":
        method = (payload.get("params") or {}).get("name")
    return method if method in KNOWN_METHODS else "other"


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _request_id(scope: Scope, headers: dict[str, str]) -> str:
    event = scope.get("aws.event") or {}
    gateway_id = event.get("requestContext", {}).get("requestId")
    return (gateway_id or headers.get("x-request-id") or uuid.uuid4().hex)[:100]


async def read_json(receive: Receive, headers: dict[str, str], limit: int) -> tuple[bytes, Any]:
    """The body, capped while it streams in, and its JSON."""
    too_big = Refused(413, jsonrpc_error(-32600, f"request body exceeds {limit} bytes"), "validation")
    declared = headers.get("content-length") or "0"
    if not declared.isdigit():
        raise Refused(400, jsonrpc_error(-32600, "invalid Content-Length"), "validation")
    if int(declared) > limit:
        raise too_big
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > limit:
            raise too_big
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    try:
        return body, json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise Refused(
            400, jsonrpc_error(-32700, "parse error: body is not valid JSON"), "validation"
        ) from None


def answered_with_error(status: int, body: bytes) -> ErrorClass | None:
    """The class of an error the MCP SDK answered itself (unknown method, bad params, 4xx)."""
    if status >= 500:
        return "internal"
    if status >= 400:
        return "validation"
    if b'"error"' not in body:  # the common case: skip parsing a successful reply
        return None
    try:
        reply = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return "validation" if isinstance(reply, dict) and "error" in reply else None


class SessionVaultApp:
    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self.server = build_server(runtime.vault)
        hosts = list(runtime.settings.allowed_hosts)
        # Behind API Gateway the Host is the API's domain and the key is the only credential;
        # on 127.0.0.1 keep the SDK's DNS-rebinding check with the local names.
        self.security = TransportSecuritySettings(
            enable_dns_rebinding_protection="*" not in hosts, allowed_hosts=hosts
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        path = scope["path"].rstrip("/") or "/"
        if path == "/health":
            await respond(send, 200, b'{"ok": true}')
        elif path != "/mcp":
            await respond(send, 404, b'{"error": "not found"}')
        elif scope["method"] != "POST":
            # Stateless JSON mode: no SSE stream to open (GET) and no session to end (DELETE).
            await respond(send, 405, b'{"error": "method not allowed"}', {"Allow": "POST"})
        else:
            await self.handle_mcp(scope, receive, send)

    async def handle_mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        headers = _headers(scope)
        log = telemetry.RequestLog(
            request_id=_request_id(scope, headers),
            ip=(scope.get("client") or ("", 0))[0],
            user_agent=headers.get("user-agent", ""),
        )
        try:
            await self._serve(scope, receive, send, headers, log)
        except Refused as refusal:
            log.status, log.error_class = refusal.status, refusal.error_class
            await respond(send, refusal.status, refusal.body, refusal.headers)
        log.latency_ms = int((time.perf_counter() - started) * 1000)
        await anyio.to_thread.run_sync(self._record, log)

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str], log: telemetry.RequestLog
    ) -> None:
        body, payload = await read_json(receive, headers, self.rt.settings.max_body_bytes)
        log.tool = method_of(payload)
        who = await self._authenticate(headers.get("authorization"), log)
        log.user_id = who.user_id
        await self._admit(who)
        state = CallState(principal=who)
        token = current_call.set(state)
        try:
            log.status, reply = await self._dispatch(scope, body, receive, send)
        finally:
            current_call.reset(token)
        log.error_class = state.error_class or answered_with_error(log.status, reply)

    async def _authenticate(self, authorization: str | None, log: telemetry.RequestLog) -> Principal:
        try:
            outcome = await anyio.to_thread.run_sync(auth.authenticate, self.rt.db, authorization)
        except DB_ERRORS as exc:
            log.failure = type(exc).__name__
            raise Refused(503, UNAVAILABLE, "db", {"Retry-After": "5"}) from None
        if outcome.principal is None:
            log.auth_reason = outcome.reason
            raise Refused(401, UNAUTHORIZED, "auth", {"WWW-Authenticate": "Bearer"})
        return outcome.principal

    async def _admit(self, who: Principal) -> None:
        settings = self.rt.settings
        try:
            verdict = await anyio.to_thread.run_sync(
                ratelimit.check, self.rt.db, who.user_id, settings.rate_per_minute, settings.rate_per_day
            )
        except DB_ERRORS:
            raise Refused(503, UNAVAILABLE, "db", {"Retry-After": "5"}) from None
        if not verdict.allowed:
            body = {
                "error": "rate_limited",
                "window": verdict.window,
                "limit": verdict.limit,
                "retry_after": verdict.retry_after_s,
            }
            retry = {"Retry-After": str(verdict.retry_after_s)}
            raise Refused(429, json.dumps(body).encode(), "rate_limit", retry)

    async def _dispatch(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> tuple[int, bytes]:
        """Hand the (already read) body to the SDK; returns the status and the reply body."""
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        status, reply = 500, bytearray()

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                reply.extend(message.get("body", b""))
            await send(message)

        manager = StreamableHTTPSessionManager(
            self.server,
            json_response=True,
            stateless=True,
            security_settings=self.security,
            max_request_body_size=self.rt.settings.max_body_bytes,
        )
        async with manager.run():
            await manager.handle_request(scope, replay, watch)
        return status, bytes(reply)

    def _record(self, log: telemetry.RequestLog) -> None:
        try:
            audit.record(self.rt.db, log, self.rt.settings.audit_salt)
        except Exception as exc:  # the response is already sent; losing the row must be loud
            log.failure = f"audit write failed: {type(exc).__name__}"
        telemetry.emit(log)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
