"""The HTTP edge, before any MCP or OAuth handler: reading a capped body within a deadline, its
JSON (/mcp) or form (the OAuth endpoints and the consent page), naming the method for logs and
limits, picking the request id, and answering refusals. Pure functions of the request; no
database.
Text the database cannot hold (NUL, lone surrogates: `server/text_checks.py`) is refused here,
in a form or a JSON body, before any handler; `edge_checks.py` does the same for paths and query
strings."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection, Mapping
from typing import Any

import anyio
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from sessionvault.db.admission import Budget
from sessionvault.errors import ErrorClass, Refused
from sessionvault.server.text_checks import (
    NUL_OR_SURROGATE,
    encoded_problem,
    json_problem,
    request_problem,
    text_problem,
)

UNAUTHORIZED = json.dumps({"error": "unauthorized"}).encode()
UNAVAILABLE = json.dumps({"error": "temporarily unavailable, try again"}).encode()


async def respond(send: Send, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    """A whole response: JSON unless `headers` name another Content-Type."""
    extra = {k.lower(): v for k, v in (headers or {}).items()}
    content_type = extra.pop("content-type", "application/json")
    raw = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def jsonrpc_error(code: int, message: str, request_id: Any = None) -> bytes:
    error = {"code": code, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


NOT_ALLOWED = b'{"error": "method not allowed"}'


async def health(scope: Scope, send: Send) -> None:
    """/health answers GET and HEAD (the server drops a HEAD's body); else a 405. A 200 to
    CONNECT switched the connection's protocol, and sending the body after it logged a traceback."""
    if scope["method"] in ("GET", "HEAD"):
        await respond(send, 200, b'{"ok": true}')
    else:
        await respond(send, 405, NOT_ALLOWED, {"Allow": "GET, HEAD"})


def check_text(scope: Scope, path: str, api_prefix: str) -> None:
    """Refuses a path or query string holding a NUL or a lone surrogate (`text_checks`), before
    any surface sees it: a 400 in the shape of the surface it was sent to (JSON-RPC for /mcp,
    the API's error, else OAuth's `invalid_request`, which the web view's paths get too)."""
    problem = request_problem(scope)
    if problem is None:
        return
    said = f"text may not hold {NUL_OR_SURROGATE}: {problem}"
    if path == "/mcp":
        raise Refused(400, jsonrpc_error(-32600, said), "validation", edge_check="text")
    shaped: dict[str, Any] = {"error": "invalid_request", "error_description": said}
    if path.startswith(api_prefix + "/"):
        shaped = {"error": {"code": "validation", "message": said}}
    raise Refused(
        400, json.dumps(shaped).encode(), "validation", {"Cache-Control": "no-store"}, edge_check="text"
    )


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


# A caller's X-Request-Id is taken only in this shape; anything else gets a fresh id, so that
# no caller text (markup, control characters, another request's id format) reaches a log line
# or an audit row.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def request_id(scope: Scope, headers: Mapping[str, str]) -> str:
    """Inside Lambda, API Gateway's own id for the request (`requestContext.requestId`, which
    the caller cannot choose), else the caller's X-Request-Id if it has the shape above, else
    a fresh random one."""
    event = scope.get("aws.event") or {}
    context = event.get("requestContext") if isinstance(event, dict) else None
    gateway_id = context.get("requestId") if isinstance(context, dict) else None
    if isinstance(gateway_id, str) and gateway_id:
        return gateway_id[:100]
    sent = headers.get("x-request-id", "")
    return sent if _REQUEST_ID.fullmatch(sent) else uuid.uuid4().hex


async def read_json(receive: Receive, headers: Mapping[str, str], limit: int) -> tuple[bytes, Any]:
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
        payload = json.loads(body)
    except (ValueError, RecursionError):  # bad UTF-8 or JSON, huge integers, deep nesting
        raise Refused(
            400, jsonrpc_error(-32700, "parse error: body is not valid JSON"), "validation"
        ) from None
    found = json_problem(payload)
    if found:  # the place it names is the caller's own key path, with the bad characters masked
        what, where = found
        rid = payload.get("id") if isinstance(payload, dict) else None
        code = -32602 if where.startswith("params") else -32600  # invalid params / invalid request
        message = f"text may not hold {NUL_OR_SURROGATE}: {what} in {where}"
        rid = rid if isinstance(rid, str | int) and not text_problem(str(rid)) else None
        raise Refused(400, jsonrpc_error(code, message, rid), "validation")
    return body, payload


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

# The whole body must arrive within this many seconds of the first read, else a 408 that closes
# the connection: a client that sends its headers and then a trickle (or nothing) would
# otherwise hold a local server's connection and task for ever (uvicorn has no such limit).
# A constant, not a setting: a local server's clients reach it over loopback, where even a body
# at the 1 MB cap takes milliseconds. Inside Lambda the body has already arrived whole (Mangum
# hands it over in one message): this never fires there.
BODY_DEADLINE_S = 10.0


def too_slow() -> Refused:
    """A new refusal each time (a raised instance keeps its traceback)."""
    return Refused(408, b'{"error": "request body not received in time"}', "timeout", {"Connection": "close"})


async def read_body(receive: Receive, limit: int = MAX_FORM_BYTES, too_big: Refused = TOO_LARGE) -> bytes:
    """The body, capped while it streams in (a client may lie in Content-Length or send none),
    and whole within `BODY_DEADLINE_S`."""
    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(BODY_DEADLINE_S) as deadline:
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
    if deadline.cancelled_caught:
        raise too_slow()
    return b"".join(chunks)


# --- form bodies (the OAuth endpoints and the consent page) ------------------------------------

FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
# Far more than any OAuth request or the consent form holds (under ten fields), and no files:
# checked before a handler parses the same bytes with Starlette's own (looser) limits.
MAX_FORM_FIELDS = 100


def media_type(content_type: str | None) -> str:
    """A Content-Type's media type, lower-cased: media types are case-insensitive (RFC 9110)."""
    return (content_type or "").partition(";")[0].strip().lower()


JSON = "application/json"


def is_json(content_type: str | None) -> bool:
    """Whether a body is JSON, as every layer that reads Content-Type must judge it: one function,
    or one layer admits (and charges) what the next refuses (issue 35 item 6)."""
    return media_type(content_type) == JSON


async def form_problem(scope: Scope, body: bytes) -> str | None:
    """What is wrong with `body` as a urlencoded or multipart form (as the request's
    Content-Type says, read as Starlette reads it), or None: Starlette's parser refuses or fails
    on it (a missing or broken boundary, a part without a name, a file, more than
    `MAX_FORM_FIELDS` fields, a header too long), or a field holds text the database cannot
    (NUL, a lone surrogate; a urlencoded form must be UTF-8). Parsed here, ahead of the
    handler, so that none of that becomes a 500 (or an SDK handler's logged traceback) there.
    Other media types are not forms: None."""
    request = Request(scope, replaying(body))
    kind = media_type(request.headers.get("content-type"))
    if kind not in (FORM, MULTIPART):
        return None
    if kind == FORM and (problem := encoded_problem(body)):
        return f"{problem} in the form"
    try:
        async with request.form(max_files=0, max_fields=MAX_FORM_FIELDS) as form:
            for key, value in form.multi_items():
                problem = text_problem(key) or (text_problem(value) if isinstance(value, str) else None)
                if problem:
                    return f"{problem} in the form"
    except Exception:  # MultiPartException, and whatever else a malformed form raises in there
        return "the form could not be read"
    return None


def body_text_problem(scope: Scope, body: bytes) -> str | None:
    """For a JSON body (as the Content-Type says): NUL or a lone surrogate in a key or string,
    or None. A body that is not JSON at all is left to its handler, which says so."""
    request = Request(scope, replaying(body))
    kind = media_type(request.headers.get("content-type"))
    if kind != "application/json" and not kind.endswith("+json"):
        return None
    try:
        found = json_problem(json.loads(body))
    except (ValueError, RecursionError):
        return None
    return f"{found[0]} in {found[1]}" if found else None


def replaying(body: bytes) -> Receive:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive
