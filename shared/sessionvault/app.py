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
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

from sessionvault import audit, auth, ratelimit, telemetry
from sessionvault.errors import ErrorClass
from sessionvault.runtime import Runtime
from sessionvault.tools import CallState, current_call

UNAUTHORIZED = json.dumps({"error": "unauthorized"}).encode()


class BodyTooLarge(Exception):
    pass


async def read_body(receive: Receive, limit: int) -> bytes:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def respond(send: Send, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def jsonrpc_error(code: int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _request_id(scope: Scope, headers: dict[str, str]) -> str:
    event = scope.get("aws.event") or {}
    return event.get("requestContext", {}).get("requestId") or headers.get("x-request-id", uuid.uuid4().hex)


def _method(payload: Any) -> str:
    if isinstance(payload, dict):
        if payload.get("method") == "tools/call":
            return str((payload.get("params") or {}).get("name", "tools/call"))[:64]
        return str(payload.get("method", "response"))[:64]
    return "batch"


class SessionVaultApp:
    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
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
        ctx = telemetry.RequestLog(
            request_id=_request_id(scope, headers),
            ip=(scope.get("client") or ("", 0))[0],
            user_agent=headers.get("user-agent", ""),
        )
        status, error_class, user_id = await self._pipeline(scope, receive, send, headers, ctx)
        ctx.status, ctx.error_class, ctx.user_id = status, error_class, user_id
        ctx.latency_ms = int((time.perf_counter() - started) * 1000)
        await anyio.to_thread.run_sync(self._record, ctx)

    async def _pipeline(
        self, scope: Scope, receive: Receive, send: Send, headers: dict, ctx: telemetry.RequestLog
    ) -> tuple[int, ErrorClass | None, str | None]:
        limit = self.rt.settings.max_body_bytes
        try:
            declared = int(headers.get("content-length") or 0)
            if declared > limit:
                raise BodyTooLarge
            body = await read_body(receive, limit)
        except BodyTooLarge:
            await respond(send, 413, jsonrpc_error(-32600, f"request body exceeds {limit} bytes"))
            return 413, "validation", None
        except ValueError:
            await respond(send, 400, jsonrpc_error(-32700, "invalid Content-Length"))
            return 400, "validation", None
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            await respond(send, 400, jsonrpc_error(-32700, "parse error: body is not valid JSON"))
            return 400, "validation", None
        ctx.tool = _method(payload)

        outcome = await anyio.to_thread.run_sync(auth.authenticate, self.rt.db, headers.get("authorization"))
        if outcome.principal is None:
            ctx.auth_reason = outcome.reason
            await respond(send, 401, UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
            return 401, "auth", None
        who = outcome.principal

        settings = self.rt.settings
        verdict = await anyio.to_thread.run_sync(
            ratelimit.check,
            self.rt.db,
            who.user_id,
            settings.rate_per_minute,
            settings.rate_per_day,
        )
        if not verdict.allowed:
            body = json.dumps(
                {
                    "error": "rate_limited",
                    "window": verdict.window,
                    "limit": verdict.limit,
                    "retry_after": verdict.retry_after_s,
                }
            ).encode()
            await respond(send, 429, body, {"Retry-After": str(verdict.retry_after_s)})
            return 429, "rate_limit", who.user_id

        state = CallState(principal=who)
        token = current_call.set(state)
        try:
            status = await self._serve_mcp(scope, body, receive, send)
        finally:
            current_call.reset(token)
        if state.tool:
            ctx.tool = state.tool
        return status, state.error_class, who.user_id

    async def _serve_mcp(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> int:
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        status = 500

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        manager = StreamableHTTPSessionManager(
            self.rt.server,
            json_response=True,
            stateless=True,
            security_settings=self.security,
            max_request_body_size=self.rt.settings.max_body_bytes,
        )
        async with manager.run():
            await manager.handle_request(scope, replay, watch)
        return status

    def _record(self, ctx: telemetry.RequestLog) -> None:
        salt = self.rt.settings.audit_salt
        event = audit.AuditEvent(
            user_id=ctx.user_id,
            request_id=ctx.request_id,
            tool=ctx.tool,
            error_class=ctx.error_class,
            latency_ms=ctx.latency_ms,
            ip_hash=audit.salted_hash(ctx.ip, salt),
            ua_hash=audit.salted_hash(ctx.user_agent, salt),
        )
        try:
            audit.record(self.rt.db, event)
        except Exception as exc:  # the response is already sent; losing the row must be loud
            telemetry.audit_write_failed(ctx, exc)
        telemetry.emit(ctx)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
