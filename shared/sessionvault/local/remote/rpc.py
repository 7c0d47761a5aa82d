"""A minimal MCP-over-HTTP caller for the laptop side (hook, doctor): one stateless JSON-RPC
request with the standard library. httpx2 and the mcp client would add ~70-250 ms of imports
to every client start, and a stateless server needs no handshake."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sessionvault.errors import ConfigError, ToolCallFailed

PROTOCOL_VERSION = "2025-06-18"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_MAX_BODY = 1_000_000


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str


def require_safe_url(url: str) -> str:
    """The URL's host, if the API key may go there: over https, or plain http to this machine."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"not an http(s) URL: {url!r}")
    if parts.scheme == "http" and parts.hostname not in LOOPBACK:
        raise ConfigError(
            f"refusing to send the API key over plain http to {parts.hostname}: use https"
            " (plain http is for 127.0.0.1 / localhost only)"
        )
    return parts.hostname


def request(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float,
) -> Reply:
    """One HTTP request with the standard library (httpx2 would add ~70 ms of imports).

    `timeout` applies to each socket operation; wrap the call in `within` for a total limit.
    """
    from http.client import HTTPConnection, HTTPSConnection
    from urllib.parse import urlsplit

    host = require_safe_url(url)
    parts = urlsplit(url)
    conn_class = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    conn = conn_class(host, parts.port, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        conn.request(method, target, body=body, headers=dict(headers or {}))
        response = conn.getresponse()
        return Reply(response.status, response.read(_MAX_BODY), response.getheader("content-type") or "")
    finally:
        conn.close()


def within(seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) with a hard wall-clock limit: raises TimeoutError when it runs longer.

    The call runs on a daemon thread, so an abandoned one (a hung git or server) is simply
    dropped when the process exits.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=run, name="sessionvault-hook", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {seconds} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def mcp_headers(key: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
    }


def rpc_body(method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def tool_result(reply: Reply) -> dict[str, Any]:
    """structuredContent of a tools/call answer (JSON, or the last event of an SSE stream)."""
    text = reply.body.decode("utf-8", "replace")
    if reply.content_type.startswith("text/event-stream"):
        events = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = events[-1] if events else ""
    message = json.loads(text)
    if "error" in message:
        raise ToolCallFailed(str(message["error"].get("message", "error")))
    result = message["result"]
    if result.get("isError"):
        parts = result.get("content") or [{}]
        raise ToolCallFailed(str(parts[0].get("text", "tool error")))
    structured = result.get("structuredContent")
    if not isinstance(structured, dict):
        structured = json.loads(result["content"][0]["text"])
    return dict(structured)
