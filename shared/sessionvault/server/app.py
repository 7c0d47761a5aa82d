"""The HTTP app: body cap -> JSON -> admission (API key, tenant, rate limit, audit row: one
round trip) -> MCP tool -> log line.

A plain ASGI callable with no lifespan (Mangum would run one on every invocation): the MCP
session manager is started once per event loop instead (`mcp_host`)."""

from __future__ import annotations

import time

import anyio.to_thread
import psycopg
import psycopg_pool
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

from sessionvault import telemetry
from sessionvault.db import audit
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server import auth
from sessionvault.server.edge import (
    UNAVAILABLE,
    answered_with_error,
    budget_of,
    headers_of,
    method_of,
    read_json,
    request_id,
    respond,
)
from sessionvault.server.mcp_host import ManagerPerLoop
from sessionvault.server.tools import TOOL_NAMES, CallState, build_server, current_call

DB_ERRORS = (psycopg.Error, psycopg_pool.PoolTimeout)


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
        self.manager = ManagerPerLoop(
            lambda: StreamableHTTPSessionManager(
                self.server,
                json_response=True,
                stateless=True,
                security_settings=self.security,
                max_request_body_size=runtime.settings.max_body_bytes,
            )
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
        headers = headers_of(scope)
        log = telemetry.RequestLog(
            request_id=request_id(scope, headers),
            ip=(scope.get("client") or ("", 0))[0],
            user_agent=headers.get("user-agent", ""),
        )
        try:
            await self._serve(scope, receive, send, headers, log)
        except Refused as refusal:
            log.status, log.error_class = refusal.status, refusal.error_class
            await respond(send, refusal.status, refusal.body, refusal.headers)
        log.latency_ms = int((time.perf_counter() - started) * 1000)
        if log.audit_id is None or (log.admitted and log.error_class):
            await anyio.to_thread.run_sync(self._audit, log)  # a database write: off the loop
        telemetry.emit(log)

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str], log: telemetry.RequestLog
    ) -> None:
        body, payload = await read_json(receive, headers, self.rt.settings.max_body_bytes)
        log.tool = method_of(payload, TOOL_NAMES)
        authorization = headers.get("authorization")
        try:
            who = await anyio.to_thread.run_sync(auth.admit, self.rt, authorization, budget_of(payload), log)
        except DB_ERRORS as exc:
            log.failure = type(exc).__name__
            raise Refused(503, UNAVAILABLE, "db", {"Retry-After": "5"}) from None
        state = CallState(principal=who)
        token = current_call.set(state)
        try:
            log.status, reply = await self._dispatch(scope, body, receive, send)
        finally:
            current_call.reset(token)
        log.error_class = state.error_class or answered_with_error(log.status, reply)

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

        manager = await self.manager.get()
        await manager.handle_request(scope, replay, watch)
        return status, bytes(reply)

    def _audit(self, log: telemetry.RequestLog) -> None:
        """The audit row of a request that never reached admission, or the outcome of an
        admitted call that failed (admission wrote the row of every other request)."""
        try:
            if log.audit_id is None:
                audit.record(self.rt.db, log, self.rt.settings.audit_salt)
            elif log.user_id:
                audit.finish(self.rt.db, log.user_id, log.audit_id, log)
        except Exception as exc:  # the response is already sent; losing the row must be loud
            log.failure = f"audit write failed: {type(exc).__name__}"


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
