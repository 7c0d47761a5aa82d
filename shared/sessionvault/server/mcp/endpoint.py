"""/mcp, once its method is POST: the edge checks (before the body is read and before any
database work), the body, the admission, and the MCP SDK's handling of the request (a
2025-era request in `exchange.py`, without the SDK's per-request transport; a 2026-07-28
one through the SDK's session manager, whose entry for it is a single exchange already).

The admission goes one of two ways: a tool call whose credential this instance admitted
lately rides on the tool's own transaction (one flight, `server/admission/riding.py`), its answer held
until the admission decides; anything else is admitted in a flight of its own first."""

from __future__ import annotations

from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from sessionvault.errors import ErrorClass
from sessionvault.runtime import Runtime
from sessionvault.server.admission import admitter as auth
from sessionvault.server.admission import guard, riding
from sessionvault.server.context import RequestContext
from sessionvault.server.edge import answered_with_error, budget_of, method_of, read_json, replaying
from sessionvault.server.mcp.call_state import CallState, current_call
from sessionvault.server.mcp.exchange import JsonExchange, handshake_era
from sessionvault.server.mcp.host import ManagerPerLoop, mcp_errors_only
from sessionvault.server.mcp.tools import TOOL_NAMES, build_server, scope_of
from sessionvault.service.principal import Principal


class McpEndpoint:
    def __init__(
        self,
        runtime: Runtime,
        policy: guard.HeaderPolicy,
        failures: guard.AuthFailureLimit | None,
        admitter: auth.Admitter,
    ) -> None:
        self.rt, self.policy, self.failures, self.admitter = runtime, policy, failures, admitter
        self.server = build_server(runtime.vault)
        # Inside the SDK's own (OpenTelemetry) middleware: a handler's unexpected exception
        # becomes a JSON-RPC internal error here, not a logged traceback with its message.
        self.server.middleware.append(mcp_errors_only)
        settings = runtime.settings
        # `policy` decides before the body is read; the SDK's own check (on 127.0.0.1 only:
        # behind API Gateway the Host is the API's domain) is kept, with the same lists.
        self.security = TransportSecuritySettings(
            enable_dns_rebinding_protection=guard.is_local(settings),
            allowed_hosts=list(settings.allowed_hosts),
            allowed_origins=list(policy.origins),
        )
        self.exchange = JsonExchange(self.server, self.security)
        self.manager = ManagerPerLoop(
            lambda: StreamableHTTPSessionManager(
                self.server,
                json_response=True,
                stateless=True,
                security_settings=self.security,
                max_request_body_size=settings.max_body_bytes,
            )
        )

    async def serve(self, scope: Scope, receive: Receive, send: Send, context: RequestContext) -> None:
        log = context.log
        self._check_edge(scope, context)
        body, payload = await read_json(receive, context.headers, self.rt.settings.max_body_bytes)
        log.tool = method_of(payload, TOOL_NAMES)
        budget = budget_of(payload)
        scope_needed = (
            scope_of(log.tool, _arguments(payload)) if budget == "tool" and log.tool != "batch" else None
        )

        async def run(who: Principal, out: Send) -> None:
            state = CallState(principal=who)
            token = current_call.set(state)
            try:
                error_class = await self._dispatch(scope, body, payload, out)
            finally:
                current_call.reset(token)
            log.error_class = state.error_class or error_class

        await riding.ride_or_admit(self.admitter, context, scope_needed, budget, run, send)

    def _check_edge(self, scope: Scope, context: RequestContext) -> None:
        """Refuse before the body is read and before any database work (`guard`)."""
        check = self.policy.check(context.headers)
        if check is not None:
            raise guard.refusal(check)
        if self.failures is None:
            return
        wait = self.failures.retry_after(context.log.ip)
        if wait and not self.failures.known(guard.key_digest(context.headers.get("authorization"))):
            raise guard.too_many_failures(wait)

    async def _dispatch(self, scope: Scope, body: bytes, payload: Any, send: Send) -> ErrorClass | None:
        """Hand the message (its body read and parsed once, at the edge) to the SDK; returns the
        class of an error it answered (unknown method, bad params, a refusal)."""
        legacy, version = handshake_era(scope)
        if legacy:  # 2025 era: one JSON exchange in this task (`exchange.py`), a typed answer
            answer = await self.exchange.answer(Request(scope), payload, version)
            await answer.response(scope, _no_body, send)
            return answer.error_class
        # 2026-07-28: the SDK's own single-exchange entry, through its manager, which reads the
        # body itself: it is given the same bytes, and its reply is read for the error it holds.
        status, reply = 500, bytearray()

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                reply.extend(message.get("body", b""))
            await send(message)

        manager = await self.manager.get()
        await manager.handle_request(scope, replaying(body), watch)
        return answered_with_error(status, bytes(reply))


async def _no_body() -> Message:
    return {"type": "http.disconnect"}  # a response never reads the request


def _arguments(payload: Any) -> Any:
    """A tools/call's arguments, whatever the payload's shape (None when it has none)."""
    params = payload.get("params") if isinstance(payload, dict) else None
    return params.get("arguments") if isinstance(params, dict) else None
