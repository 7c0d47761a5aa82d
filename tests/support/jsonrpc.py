"""One stateless MCP request over real HTTP, as the simplest client sends it (no handshake)."""

from __future__ import annotations

import json
from typing import Any

import httpx2


def post(url: str, key: str, method: str, params: dict[str, Any] | None = None) -> httpx2.Response:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    return httpx2.post(url, content=json.dumps(body), headers=headers, timeout=30)


def tool_result(url: str, key: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """The `result` of a tools/call that answered 200 (a tool error included: check isError)."""
    reply = post(url, key, "tools/call", {"name": tool, "arguments": arguments})
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()["result"]
    return result
