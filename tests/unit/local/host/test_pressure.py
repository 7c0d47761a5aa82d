"""Back-pressure (issue 29, item 3): past a bounded queue or a bounded wait the local server
answers 503 with Retry-After at once, and a request whose client hung up while it waited is
never started (so nothing is committed for it)."""

from __future__ import annotations

import asyncio
import http.client
import socket
import threading
import time
from typing import Any

import uvicorn

from sessionvault.local.host import listener, pressure, statelock


class Held:
    """An app whose requests wait until released; it records which it started."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.started.append(body.decode() or scope["path"])
        if scope["path"] != "/health":
            await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done " + body})


class Call:
    """One request to the gate, its receive fed by the test."""

    def __init__(self, gate: pressure.Gate, body: str, path: str = "/mcp") -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.inbox.put_nowait({"type": "http.request", "body": body.encode(), "more_body": False})
        self.sent: list[dict[str, Any]] = []
        scope = {"type": "http", "path": path, "method": "POST", "headers": []}
        self.task = asyncio.ensure_future(gate(scope, self.inbox.get, self._send))

    async def _send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int | None:
        return self.sent[0]["status"] if self.sent else None

    def header(self, name: bytes) -> bytes | None:
        return dict(self.sent[0]["headers"]).get(name) if self.sent else None


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_past_the_queue_the_answer_is_503_with_retry_after_at_once() -> None:
    async def run() -> None:
        app = Held()
        gate = pressure.Gate(app, active=1, waiting=1, wait_s=60)
        first, second = Call(gate, "first"), Call(gate, "second")
        await settle()
        third = Call(gate, "third")
        await settle()
        # the third is answered while the first still works and the second waits
        assert third.task.done() and third.status == 503
        assert third.header(b"retry-after") == str(pressure.RETRY_AFTER_S).encode()
        assert app.started == ["first"] and first.status is None and second.status is None
        health = Call(gate, "", path="/health")  # never queued
        await settle()
        assert health.status == 200
        app.release.set()
        await asyncio.gather(first.task, second.task)
        assert (first.status, second.status) == (200, 200)
        assert app.started == ["first", "/health", "second"]
        assert gate.busy == 0 and not gate.queue and gate.refused == 1

    asyncio.run(run())


def test_a_bounded_wait_ends_in_503_not_a_late_start() -> None:
    async def run() -> None:
        app = Held()
        gate = pressure.Gate(app, active=1, waiting=8, wait_s=0.05)
        first, second = Call(gate, "first"), Call(gate, "second")
        await second.task  # ends by itself: the wait ran out while the first still works
        assert second.status == 503 and second.header(b"retry-after")
        app.release.set()
        await first.task
        assert app.started == ["first"] and gate.busy == 0 and not gate.queue

    asyncio.run(run())


def test_a_waiting_request_whose_client_hung_up_is_never_started() -> None:
    async def run() -> None:
        app = Held()
        gate = pressure.Gate(app, active=1, waiting=8, wait_s=60)
        first, gone, kept = Call(gate, "first"), Call(gate, "save that nobody waits for"), Call(gate, "kept")
        await settle()
        gone.inbox.put_nowait({"type": "http.disconnect"})
        await settle()
        assert gone.task.done() and gone.sent == [] and gate.abandoned == 1
        app.release.set()
        await asyncio.gather(first.task, kept.task)
        assert app.started == ["first", "kept"] and kept.sent[1]["body"] == b"done kept"
        assert gate.busy == 0 and not gate.queue

    asyncio.run(run())


def test_a_waiting_request_holds_at_most_the_body_cap_and_gets_all_of_its_body() -> None:
    async def run() -> None:
        app = Held()
        gate = pressure.Gate(app, active=1, waiting=8, wait_s=60)
        first = Call(gate, "first")
        big = Call.__new__(Call)  # a body in two pieces, the first past the cap
        big.inbox = asyncio.Queue()
        big.inbox.put_nowait(
            {"type": "http.request", "body": b"x" * (pressure.WATCH_BYTES + 1), "more_body": True}
        )
        big.inbox.put_nowait({"type": "http.request", "body": b"tail", "more_body": False})
        big.sent = []
        scope = {"type": "http", "path": "/mcp", "method": "POST", "headers": []}
        big.task = asyncio.ensure_future(gate(scope, big.inbox.get, big._send))
        await settle()
        assert big.inbox.qsize() == 1  # the waiting request stopped reading at the cap
        app.release.set()
        await asyncio.gather(first.task, big.task)
        assert app.started[1] == "x" * (pressure.WATCH_BYTES + 1) + "tail"

    asyncio.run(run())


def test_through_uvicorn_a_hang_up_in_the_queue_is_seen_and_the_request_dropped() -> None:
    """The same over a real connection: uvicorn tells the hang-up through `receive`."""
    app = Held()
    gate = pressure.Gate(app, active=1, waiting=8, wait_s=60)
    sock = statelock.bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = listener.build(gate, "127.0.0.1", port, log_level="warning")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        first = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        first.request("POST", "/mcp", body=b"first")
        until(lambda: app.started == ["first"])
        quitter = socket.create_connection(("127.0.0.1", port))
        quitter.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\ngone")
        until(lambda: len(gate.queue) == 1)
        quitter.close()
        until(lambda: gate.abandoned == 1)
        server_loop_call(server, app.release.set)
        assert first.getresponse().read() == b"done first"
        assert app.started == ["first"]  # the hung-up request never ran
        until(lambda: gate.busy == 0)
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def until(check: Any, timeout_s: float = 20) -> None:
    """Wait for a state (not a timing: the bound is only there to fail instead of hanging)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "state not reached"
        time.sleep(0.01)


def server_loop_call(server: uvicorn.Server, fn: Any) -> None:
    """Run `fn` on the server's loop (an asyncio.Event belongs to it)."""
    loop = next(iter(server.servers))._loop  # type: ignore[attr-defined]
    loop.call_soon_threadsafe(fn)
