"""A handshake-era (2025) stateless POST to /mcp, answered with one JSON body in the request's
own task: the MCP SDK's protocol handling without its per-request transport.

For such a request the SDK's session manager builds a whole connection and then tears it down:
a `StreamableHTTPServerTransport` with four memory streams and a message-router task, a
`JSONRPCDispatcher` with its own task group started in the manager's, the handler spawned as a
further task, its answer routed back through the streams. Profiled, that machinery was most of
what a `load_session` cost over HTTP beyond the tool's own work (issue 29, item 3). A stateless
JSON exchange needs none of it: one request in, one answer out, no session, no back-channel
(the SDK's JSON mode drops a handler's notifications and refuses its requests, as here).

Kept from the SDK, by calling its own pieces: the transport's checks and their answers (Host
and Origin on local through `TransportSecurityMiddleware`, Content-Type, Accept, the body's
JSON and JSON-RPC shape, notifications and posted responses answered 202), the negotiation of
the protocol version (`Connection.from_envelope` with the header's version, as the SDK's
stateless path seeds it) and the whole request pipeline (`serve_one`: the middleware chain,
per-version validation of parameters and results, `initialize`). The answers are built as the
transport builds them, byte for byte. 2026-07-28 requests keep the SDK's own entry, which is a
single exchange already (`endpoint.py` routes by the MCP-Protocol-Version header, as the SDK does)."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import ServerRunner, aclose_shielded, serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp.types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from sessionvault.errors import ErrorClass
from sessionvault.server.edge import JSON, is_json

log = logging.getLogger(__name__)

VERSION_HEADER = b"mcp-protocol-version"
# The transport's context for a stateless JSON request: no room for a server-initiated request.
TRANSPORT = TransportContext(kind="streamable-http", can_send_request=False)
JSON_HEADERS = {"Content-Type": JSON}


def handshake_era(scope: Scope) -> tuple[bool, str | None]:
    """Whether the SDK would serve this request on its handshake-era (2025) path, and the
    MCP-Protocol-Version it names: none at all, or one of the handshake versions (its first
    value, as the SDK reads it). Any other value goes to the SDK's 2026-07-28 entry, which
    validates it and answers an unsupported one."""
    version = next((v.decode("latin-1") for k, v in scope["headers"] if k == VERSION_HEADER), None)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS, version


@dataclass
class _Exchange:
    """The `DispatchContext` of one request: what the SDK's JSON mode gives a handler (a
    notification or progress has no wire and is dropped; a request to the client is refused)."""

    request_id: RequestId | None
    message_metadata: ServerMessageMetadata
    transport: TransportContext = TRANSPORT
    can_send_request: bool = False
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


@dataclass(frozen=True)
class Answered:
    """The exchange's answer: the response to send (a notification's pipeline runs after it, as
    its background task), and the class of the error it carries, if any, for the log."""

    response: Response
    error_class: ErrorClass | None = None


class JsonExchange:
    def __init__(self, server: Server[Any], security: TransportSecuritySettings) -> None:
        self.server = server
        self.security = TransportSecurityMiddleware(security)
        # The server's lifespan is the SDK's default (it yields {}: `tools.build_server` sets
        # none, and a test holds it): no state for a request to share, nothing to enter.
        self.lifespan_state: dict[str, Any] = {}

    async def answer(self, request: Request, payload: Any, version: str | None) -> Answered:
        """One POST, as the SDK's stateless JSON transport answers it: `payload` is its body as
        the edge parsed it (the edge refused a body that is not JSON, before admission)."""
        refused = await self.security.validate_request(request, is_post=True)
        if refused is not None:
            return Answered(refused, "validation")
        has_json, _ = check_accept_headers(request)
        if not has_json:
            return _error("Not Acceptable: Client must accept application/json", HTTPStatus.NOT_ACCEPTABLE)
        if not is_json(request.headers.get("content-type")):  # as the edge judged it (guard.py)
            return _error(
                "Unsupported Media Type: Content-Type must be application/json",
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            )
        try:
            message = jsonrpc_message_adapter.validate_python(payload, by_name=False)
        except ValidationError as exc:  # a batch too: the SDK's transport takes one message
            return _error(f"Validation error: {exc}", HTTPStatus.BAD_REQUEST, INVALID_PARAMS)
        connection = Connection.from_envelope(version or DEFAULT_NEGOTIATED_VERSION, None, None)
        metadata = ServerMessageMetadata(request_context=request, can_send_request=False)
        if not isinstance(message, JSONRPCRequest):  # a notification, or a response: 202, no body
            if isinstance(message, JSONRPCNotification):
                background = BackgroundTask(self._notify, connection, metadata, message)
                return Answered(
                    Response(None, HTTPStatus.ACCEPTED, {"Content-Type": JSON}, background=background)
                )
            return Answered(Response(None, HTTPStatus.ACCEPTED, {"Content-Type": JSON}))
        reply = await self._answer(connection, _Exchange(message.id, metadata), message)
        body = reply.model_dump_json(by_alias=True, exclude_unset=True)
        error: ErrorClass | None = "validation" if isinstance(reply, JSONRPCError) else None
        return Answered(Response(body, HTTPStatus.OK, JSON_HEADERS), error)

    async def _answer(
        self, connection: Connection, exchange: _Exchange, message: JSONRPCRequest
    ) -> JSONRPCResponse | JSONRPCError:
        try:
            result = await serve_one(
                self.server,
                exchange,
                message.method,
                message.params,
                connection=connection,
                lifespan_state=self.lifespan_state,
            )
        except Exception as exc:
            error = handler_exception_to_error_data(exc)  # MCPError, and invalid params
            if error is None:
                # Past `host.mcp_errors_only` (the SDK's own layers): an internal error, logged
                # by type and place, never the message (the SDK would answer it code 0 and
                # quote it, and log its traceback).
                frames = traceback.extract_tb(exc.__traceback__)
                where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""
                log.error("mcp request failed", extra={"error_type": type(exc).__name__, "where": where})
                error = ErrorData(code=INTERNAL_ERROR, message="internal error")
            return JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
        return JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)

    async def _notify(
        self, connection: Connection, metadata: ServerMessageMetadata, message: JSONRPCNotification
    ) -> None:
        """After the 202, as the SDK's dispatcher would: the server's notification pipeline
        (which contains a handler's failure itself)."""
        runner = ServerRunner(self.server, connection, self.lifespan_state)
        try:
            await runner.on_notify(_Exchange(None, metadata), message.method, message.params)
        finally:
            await aclose_shielded(connection)


def _error(message: str, status: HTTPStatus, code: int = INVALID_REQUEST) -> Answered:
    """The transport's error answer: a JSON-RPC error with a null id, JSON."""
    error = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))
    body = error.model_dump_json(by_alias=True, exclude_unset=True)
    return Answered(Response(body, status_code=status, headers={"Content-Type": JSON}), "validation")
