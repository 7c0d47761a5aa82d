"""Tools for the attack tier: an in-process ASGI client, a catcher for the structured request
log, and a fake OpenAI-compatible embeddings endpoint that can be taken down and brought back."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import math
import struct
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..support.logs import LogCatcher

PROTOCOL_VERSION = "2025-06-18"
HOST = b"127.0.0.1:8000"
Headers = list[tuple[bytes, bytes]]


def mcp_headers(key: str | None, body: bytes) -> Headers:
    """What a well-behaved client sends with a JSON-RPC POST."""
    headers = [
        (b"host", HOST),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", PROTOCOL_VERSION.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    if key is not None:
        headers.append((b"authorization", f"Bearer {key}".encode()))
    return headers


def rpc(method: str, params: Any = None, id_: Any = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def tool_call(name: str, arguments: Any, id_: Any = 1) -> bytes:
    return rpc("tools/call", {"name": name, "arguments": arguments}, id_)


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def tool_result(self) -> dict[str, Any]:
        """The tools/call result of a 200 reply (a JSON-RPC error fails the caller's test)."""
        assert self.status == 200, (self.status, self.body[:500])
        reply = self.json()
        assert "result" in reply, reply
        result: dict[str, Any] = reply["result"]
        return result


@dataclass
class AsgiClient:
    """Drives an ASGI app in-process on one long-lived event loop, as uvicorn or Mangum would,
    without sockets: one request is one call of the app with a hand-built scope."""

    app: Any
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    sent: int = 0

    def request(
        self,
        body: bytes,
        headers: Headers,
        *,
        method: str = "POST",
        path: str = "/mcp",
        chunks: Iterable[bytes] | None = None,
        disconnect_early: bool = False,
    ) -> Reply:
        return self.loop.run_until_complete(
            self._request(body, headers, method, path, chunks, disconnect_early)
        )

    async def _request(
        self,
        body: bytes,
        headers: Headers,
        method: str,
        path: str,
        chunks: Iterable[bytes] | None,
        disconnect_early: bool,
    ) -> Reply:
        self.sent += 1
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode("utf-8", "surrogateescape"),
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
            "state": {},
        }
        pending = list(chunks) if chunks is not None else [body]
        messages: list[dict[str, Any]] = [
            {"type": "http.request", "body": c, "more_body": i < len(pending) - 1}
            for i, c in enumerate(pending)
        ]
        if disconnect_early and messages:
            messages[-1]["more_body"] = True  # the client promised more, then went away
            messages.append({"type": "http.disconnect"})
        after_body = asyncio.Event()

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop(0)
            await after_body.wait()  # like a server: nothing more until the reply is done
            return {"type": "http.disconnect"}

        status, reply_headers, reply = 0, {}, bytearray()

        async def send(message: dict[str, Any]) -> None:
            nonlocal status, reply_headers
            if message["type"] == "http.response.start":
                assert status == 0, "response started twice"
                status = message["status"]
                reply_headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in message["headers"]}
            elif message["type"] == "http.response.body":
                reply.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    after_body.set()

        await self.app(scope, receive, send)
        after_body.set()
        return Reply(status, reply_headers, bytes(reply))

    def close(self) -> None:
        # The MCP session manager's holder task lives on this loop: cancel it, then stop.
        tasks = asyncio.all_tasks(self.loop)
        for task in tasks:
            task.cancel()
        if tasks:
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self.loop.close()


@contextmanager
def hushed(catcher: LogCatcher) -> Iterator[None]:
    """For a moment (never across a test's phases: pytest attaches its capture to loggers
    that do not propagate), the lines reach `catcher` only, not stdout nor pytest's capture:
    thousands of fuzzed requests would flood the report of a failure."""
    logger = logging.getLogger("sessionvault")
    saved = logger.handlers, logger.propagate
    logger.handlers, logger.propagate = [catcher], False
    try:
        yield
    finally:
        logger.handlers, logger.propagate = saved


# ---------------------------------------------------------------------------------------------
# A fake OpenAI-compatible embeddings endpoint.

DIMS = 384


def fake_vector(text: str) -> list[float]:
    """Deterministic, normalised, 384 dims: equal texts get equal vectors."""
    raw = b"".join(hashlib.sha256(f"{i}|{text}".encode()).digest() for i in range(DIMS * 4 // 32))
    values = [v / 2**31 - 1.0 for v in struct.unpack(f"<{DIMS}I", raw)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def _encoded(vector: list[float], as_base64: bool) -> list[float] | str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector


class _EmbeddingHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the OpenAI client reuses its connection
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed ACK

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        texts = request.get("input", "")
        texts = [texts] if isinstance(texts, str) else list(texts)
        as_base64 = request.get("encoding_format") == "base64"
        body = json.dumps(
            {
                "object": "list",
                "model": request.get("model", "fake"),
                "data": [
                    {"object": "embedding", "index": i, "embedding": _encoded(fake_vector(t), as_base64)}
                    for i, t in enumerate(texts)
                ],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class FakeEmbeddings:
    """An OpenAI-compatible /v1/embeddings on a fixed loopback port that is down (nothing
    listening: connection refused) until `up()`, and can go `down()` again."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def up(self) -> None:
        if self._server is not None:
            return
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _EmbeddingHandler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()

    def down(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        assert self._thread is not None
        self._thread.join(timeout=5)
        self._server = self._thread = None


# ---------------------------------------------------------------------------------------------
# The fuzzing harness: requests go out concurrently, each must be answered below 500 and leave
# exactly one truthful log line that does not say "internal".

NO_LOG_PATHS = ("/health",)


@dataclass
class Req:
    body: bytes
    headers: Headers
    method: str = "POST"
    path: str = "/mcp"
    chunks: tuple[bytes, ...] | None = None
    disconnect_early: bool = False
    app: int = 0  # which of the harness's apps answers it


@dataclass
class Outcome:
    req: Req
    reply: Reply
    log: dict[str, Any] | None


class Fuzzer:
    def __init__(self, apps: list[Any], logs: LogCatcher, prefix: str) -> None:
        self.loop = asyncio.new_event_loop()  # one for every app: like one uvicorn worker
        self.clients = [AsgiClient(app, self.loop) for app in apps]
        self.logs = logs
        self.prefix = prefix
        self.sent = 0
        self.outcomes: dict[str, int] = {}  # "status error-class" -> how many
        self.logged: dict[str, dict[str, Any]] = {}  # request id -> its log line (admitted ones)

    def send(self, reqs: list[Req]) -> list[Outcome]:
        ids = []
        coros = []
        for req in reqs:
            self.sent += 1
            rid = f"{self.prefix}{self.sent}"
            ids.append(rid)
            headers = [*req.headers, (b"x-request-id", rid.encode())]
            client = self.clients[req.app % len(self.clients)]
            coros.append(
                client._request(req.body, headers, req.method, req.path, req.chunks, req.disconnect_early)
            )

        async def together() -> list[Reply]:
            return list(await asyncio.gather(*coros))

        with hushed(self.logs):
            replies = self.loop.run_until_complete(together())
        lines = self.logs.take()
        by_id = {line.get("request_id"): line for line in lines if line.get("message") == "request"}
        others = [line for line in lines if line.get("message") != "request"]
        assert not [line for line in others if line.get("level") in ("ERROR", "CRITICAL")], others
        outcomes = []
        for rid, req, reply in zip(ids, reqs, replies, strict=True):
            log = by_id.get(rid)
            outcome = Outcome(req, reply, log)
            self.check(outcome)
            outcomes.append(outcome)
        return outcomes

    def check(self, o: Outcome) -> None:
        where = (
            o.req.method,
            o.req.path,
            o.req.headers,
            o.req.body[:300],
            o.reply.status,
            o.reply.body[:300],
        )
        assert o.reply.status != 0, ("no response", where)
        assert o.reply.status < 500, where
        if (o.req.path.rstrip("/") or "/") in NO_LOG_PATHS:
            return
        assert o.log is not None, ("no log line", where)
        error_class = o.log.get("error_class")  # the formatter leaves out None values
        seen = f"{o.reply.status} {error_class or 'ok'}"
        self.outcomes[seen] = self.outcomes.get(seen, 0) + 1
        assert o.log.get("error_class") not in ("internal", "db"), (o.log, where)
        assert o.log.get("failure") is None, (o.log, where)
        assert o.log.get("status") == o.reply.status, (o.log, where)
        if o.log.get("user_id"):
            self.logged[o.log["request_id"]] = o.log

    def close(self) -> None:
        tasks = asyncio.all_tasks(self.loop)
        for task in tasks:
            task.cancel()
        if tasks:
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self.loop.close()
