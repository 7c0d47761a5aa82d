"""The HTTP edge of /mcp, before any MCP: reading a capped JSON body, naming the method for
logs and limits, and answering refusals. Pure functions of the request; no database."""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection
from typing import Any

from starlette.types import Receive, Scope, Send

from sessionvault.db.admission import Budget
from sessionvault.errors import ErrorClass, Refused

UNAUTHORIZED = json.dumps({"error": "unauthorized"}).encode()
UNAVAILABLE = json.dumps({"error": "temporarily unavailable, try again"}).encode()


async def respond(send: Send, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def jsonrpc_error(code: int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()


# Protocol methods the log, the audit row and the metric dimension may name.
PROTOCOL_METHODS = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "ping",
        "server/discover",
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/read",
        "resources/templates/list",
    }
)


def method_of(payload: Any, tools: Collection[str]) -> str:
    """The tool (for tools/call) or JSON-RPC method, if it is one we know; otherwise "other".
    Never free text from a caller, and never an exception, whatever the payload's shape."""
    if not isinstance(payload, dict):
        return "batch" if isinstance(payload, list) else "other"
    method = payload.get("method")
    if method == "tools/call":
        params = payload.get("params")
        method = params.get("name") if isinstance(params, dict) else None
        return method if isinstance(method, str) and method in tools else "other"
    return method if isinstance(method, str) and method in PROTOCOL_METHODS else "other"


def budget_of(payload: Any) -> Budget:
    """Tool calls (and batches, which may hold them) spend the tool budget; the rest of the
    protocol (initialize, notifications, ping, list calls, prompts/get) its own."""
    if isinstance(payload, dict) and payload.get("method") != "tools/call":
        return "protocol"
    return "tool"


def headers_of(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def request_id(scope: Scope, headers: dict[str, str]) -> str:
    event = scope.get("aws.event") or {}
    gateway_id = event.get("requestContext", {}).get("requestId")
    return (gateway_id or headers.get("x-request-id") or uuid.uuid4().hex)[:100]


async def read_json(receive: Receive, headers: dict[str, str], limit: int) -> tuple[bytes, Any]:
    """The body, capped while it streams in, and its JSON."""
    too_big = Refused(413, jsonrpc_error(-32600, f"request body exceeds {limit} bytes"), "validation")
    declared = headers.get("content-length") or "0"
    # ASCII digits only (isdigit alone admits "²"), and few enough for int() to take.
    if not (declared.isascii() and declared.isdigit() and len(declared) <= 20):
        raise Refused(400, jsonrpc_error(-32600, "invalid Content-Length"), "validation")
    if int(declared) > limit:
        raise too_big
    body = await read_body(receive, limit, too_big)
    try:
        return body, json.loads(body)
    except (ValueError, RecursionError):  # bad UTF-8 or JSON, huge integers, deep nesting
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


MAX_FORM_BYTES = 64 * 1024  # the OAuth endpoints' and the consent page's forms


TOO_LARGE = Refused(413, b'{"error": "request body too large"}', "validation")


async def read_body(receive: Receive, limit: int = MAX_FORM_BYTES, too_big: Refused = TOO_LARGE) -> bytes:
    """The body, capped while it streams in (a client may lie in Content-Length or send none)."""
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
    return b"".join(chunks)


def replaying(body: bytes) -> Receive:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive
