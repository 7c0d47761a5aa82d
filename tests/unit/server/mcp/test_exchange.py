"""The 2025-era JSON exchange (server/mcp/exchange.py) answers every request as the MCP SDK's
stateless JSON transport does, byte for byte: status, headers and body, side by side on the
same server, the same user and the same data. The SDK's path is driven through its own
session manager, as the endpoint drove it before. A body that is not JSON never reaches the
exchange: the edge answers it before admission (tests/unit/server/test_edge.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp.server.lowlevel import server as lowlevel
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request

from sessionvault.core import records
from sessionvault.runtime import Runtime
from sessionvault.server.edge import replaying
from sessionvault.server.mcp import app_view
from sessionvault.server.mcp.call_state import CallState, current_call
from sessionvault.server.mcp.exchange import JsonExchange, handshake_era
from sessionvault.server.mcp.tools import build_server
from tests.conftest import User

pytestmark = pytest.mark.anyio

SECURITY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*"],
    allowed_origins=["http://127.0.0.1:*"],
)
HEADERS = {
    "host": "127.0.0.1:8000",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


def rpc(method: str, params: dict[str, Any] | None = None, rid: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return rpc("tools/call", {"name": tool, "arguments": arguments})


INIT = {"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
# (label, body: a message or raw bytes, headers changed from HEADERS; None drops one)
CASES: list[tuple[str, Any, dict[str, str | None]]] = [
    ("initialize", rpc("initialize", {"protocolVersion": "2025-06-18", **INIT}), {}),
    ("initialize, older", rpc("initialize", {"protocolVersion": "2024-11-05", **INIT}), {}),
    ("initialize, unknown version", rpc("initialize", {"protocolVersion": "1999-01-01", **INIT}), {}),
    ("initialize, bad params", rpc("initialize", {"protocolVersion": 7}), {}),
    ("initialized", {"jsonrpc": "2.0", "method": "notifications/initialized"}, {}),
    ("a posted response", {"jsonrpc": "2.0", "id": 9, "result": {}}, {}),
    ("ping", rpc("ping"), {}),
    ("ping, string id", rpc("ping", rid="abc"), {}),
    ("tools/list", rpc("tools/list"), {}),
    ("tools/list, no version header", rpc("tools/list"), {"mcp-protocol-version": None}),
    ("tools/list, 2025-03-26", rpc("tools/list"), {"mcp-protocol-version": "2025-03-26"}),
    ("load", call("load_session", name="exchange-a"), {}),
    (
        "load, progress token",
        rpc(
            "tools/call", {**call("load_session", name="exchange-a")["params"], "_meta": {"progressToken": 5}}
        ),
        {},
    ),
    ("load, missing", call("load_session", name="nothing-here"), {}),
    ("list", call("list_sessions"), {}),
    ("unknown tool", call("no_such_tool"), {}),
    ("bad arguments", call("load_session", name=5), {}),
    ("arguments not an object", rpc("tools/call", {"name": "load_session", "arguments": [1]}), {}),
    ("unknown method", rpc("no/such"), {}),
    ("prompts/list", rpc("prompts/list"), {}),
    ("resources/list", rpc("resources/list"), {}),
    ("resources/read", rpc("resources/read", {"uri": app_view.URI}), {}),
    ("batch", [rpc("ping"), rpc("tools/list", rid=2)], {}),
    ("a number", 5, {}),
    ("no jsonrpc member", {"id": 1, "method": "ping"}, {}),
    ("no Accept", rpc("ping"), {"accept": None}),
    ("Accept: SSE only", rpc("ping"), {"accept": "text/event-stream"}),
    ("Accept: */*", rpc("ping"), {"accept": "*/*"}),
    ("Content-Type: text/plain", rpc("ping"), {"content-type": "text/plain"}),
    ("Content-Type: application/jsonx", rpc("ping"), {"content-type": "application/jsonx"}),
    ("Content-Type with charset", rpc("ping"), {"content-type": "application/json; charset=utf-8"}),
    ("foreign Host", rpc("ping"), {"host": "evil.example:8000"}),
    ("foreign Origin", rpc("ping"), {"origin": "http://evil.example"}),
    ("own Origin", rpc("ping"), {"origin": "http://127.0.0.1:8000"}),
]


def scope_of(changes: dict[str, str | None], body: bytes) -> dict[str, Any]:
    headers = {**HEADERS, "content-length": str(len(body)), **changes}
    raw = [(k.encode(), v.encode()) for k, v in headers.items() if v is not None]
    return {"type": "http", "method": "POST", "path": "/mcp", "headers": raw, "query_string": b""}


async def answer(app: Any, scope: dict[str, Any], body: bytes) -> tuple[int, list[Any], bytes]:
    receive = replaying(body)
    messages: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    await app(scope, receive, send)
    start = next(m for m in messages if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    return start["status"], start["headers"], content


@pytest.fixture
async def both(runtime: Runtime, user: User) -> AsyncIterator[tuple[Any, Any]]:
    saved = records.parse(records.SaveArgs, {"name": "exchange-a", "summary": "s"})
    runtime.vault.save(user.principal, saved)
    server = build_server(runtime.vault)
    manager = StreamableHTTPSessionManager(
        server, json_response=True, stateless=True, security_settings=SECURITY
    )
    exchange = JsonExchange(server, SECURITY)

    async def ours(scope: Any, receive: Any, send: Any) -> None:
        """As the endpoint drives it: the body parsed once (as the edge parses it), the typed
        answer sent."""
        payload = json.loads(await Request(scope, receive).body())
        answered = await exchange.answer(Request(scope), payload, handshake_era(scope)[1])
        await answered.response(scope, receive, send)

    token = current_call.set(CallState(principal=user.principal))
    try:
        async with manager.run():
            yield manager.handle_request, ours
    finally:
        current_call.reset(token)


@pytest.mark.parametrize(("label", "message", "changes"), CASES, ids=[c[0] for c in CASES])
async def test_the_same_answer_as_the_sdk(
    both: tuple[Any, Any], label: str, message: Any, changes: dict[str, str | None]
) -> None:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    sdk, ours = both
    scope = scope_of(changes, body)
    expected = await answer(sdk, scope, body)
    got = await answer(ours, scope, body)
    assert got == expected
    assert got[0] in (200, 202, 400, 403, 406, 415, 421)


async def test_a_tool_result_arrives_whole(both: tuple[Any, Any]) -> None:
    _, ours = both
    body = json.dumps(call("load_session", name="exchange-a")).encode()
    status, _, content = await answer(ours, scope_of({}, body), body)
    reply = json.loads(content)
    assert status == 200 and reply["id"] == 1
    assert reply["result"]["structuredContent"]["name"] == "exchange-a"


def test_the_era_is_read_as_the_sdk_routes_it() -> None:
    def era(*values: str) -> tuple[bool, str | None]:
        return handshake_era({"headers": [(b"mcp-protocol-version", v.encode()) for v in values]})

    assert handshake_era({"headers": []}) == (True, None)
    assert era("2025-06-18") == (True, "2025-06-18")
    assert era("2024-11-05", "2026-07-28") == (True, "2024-11-05")  # the first value, as the SDK
    assert era("2026-07-28") == (False, "2026-07-28")
    assert era("not-a-version") == (False, "not-a-version")  # the SDK's modern entry refuses it


def test_the_server_keeps_the_sdk_default_lifespan(runtime: Runtime) -> None:
    """The exchange enters no lifespan and gives handlers {}: right only while there is none."""
    assert build_server(runtime.vault).lifespan is lowlevel.lifespan
