"""Back-pressure for the local server: a bounded number of requests at work, a bounded queue
behind them and a bounded wait in it; past either bound, 503 with `Retry-After` at once.

Without it the server never refused: with 64 clients, loads waited 6-21 s and saves up to 65 s,
and saves whose clients had given up at 60 s were committed anyway. Now a request waits at
most `wait_s` for a place (a client's own timeout is far longer), and a full queue answers at
once. While a request waits, its connection is watched: a client that hangs up is never
started, so nothing is committed for a caller known to be gone. (Once a request is at work
its transaction runs to the end: a database write cannot be taken back half way, and the
answer is what says whether it was kept.)

An ASGI wrapper applied where `sessionvault dev`/`serve` build the app (cli/server.py), so the
Lambda (one request per instance: API Gateway and Lambda's concurrency do this there) and the
server package are untouched. /health is never queued: it says whether the process is alive."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Literal

from sessionvault import telemetry

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ACTIVE = 16  # at work at once: the pool's 8 connections, and as many embedding or encoding
WAITING = 64  # in the queue behind them
WAIT_S = 5.0  # the longest a request waits for a place before it is answered 503
RETRY_AFTER_S = 2
EXEMPT = frozenset({"/health"})
WATCH_BYTES = 1_048_576  # body read (and held) while waiting, at most: the server's own body cap
LOG_EVERY_S = 5.0  # refusals are counted and logged at most this often: a flood is one line


class Gate:
    def __init__(
        self,
        app: ASGIApp,
        *,
        active: int = ACTIVE,
        waiting: int = WAITING,
        wait_s: float = WAIT_S,
        retry_after_s: int = RETRY_AFTER_S,
    ) -> None:
        if active < 1 or waiting < 0:
            raise ValueError("active must be at least 1 and waiting at least 0")
        self.app, self.active, self.waiting, self.wait_s = app, active, waiting, wait_s
        self.retry_after_s = retry_after_s
        self.busy = 0  # requests at work
        self.queue: collections.deque[asyncio.Future[None]] = collections.deque()
        self.refused = 0  # answered 503, since the server started
        self.abandoned = 0  # their client left while they waited: never started
        self._unlogged = 0
        self._logged_at = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in EXEMPT:
            await self.app(scope, receive, send)
            return
        if self.busy < self.active and not self.queue:
            self.busy += 1
            replay: Receive = receive
        else:
            admitted = await self._wait(receive)
            if admitted is None:
                self._refuse_later()
                await self._refuse(send)
                return
            if admitted is False:
                return  # the client hung up while it waited: no answer, no work
            replay = admitted
        try:
            await self.app(scope, replay, send)
        finally:
            self._release()

    async def _wait(self, receive: Receive) -> Receive | Literal[False] | None:
        """A place (a `receive` that replays what was read while waiting), False when the
        client hung up, None when the queue is full or the wait ran out."""
        if len(self.queue) >= self.waiting:
            return None
        place: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.queue.append(place)
        read: list[Message] = []

        async def watch() -> None:
            # Reading the body is harmless (it is replayed to the app); reading past it waits
            # for the connection's end, which is how a hang-up is told.
            held = 0
            while held <= WATCH_BYTES:  # past it, stop reading: the app refuses such a body anyway
                message = await receive()
                read.append(message)
                held += len(message.get("body", b""))
                if message["type"] == "http.disconnect":
                    return

        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        watcher = asyncio.ensure_future(watch())
        try:
            await asyncio.wait({place, watcher}, timeout=self.wait_s, return_when=asyncio.FIRST_COMPLETED)
            hung_up = any(m["type"] == "http.disconnect" for m in read)
            if watcher.done() and not hung_up and not place.done() and (left := deadline - loop.time()) > 0:
                await asyncio.wait({place}, timeout=left)  # a large body: wait for the place alone
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        gone = any(m["type"] == "http.disconnect" for m in read)
        if place.done() and not place.cancelled():  # a place was handed over: it is ours
            if gone:
                self.abandoned += 1
                self._release()
                return False
            return _replaying(read, receive)
        place.cancel()
        with contextlib.suppress(ValueError):
            self.queue.remove(place)
        if gone:
            self.abandoned += 1
            return False
        return None

    def _release(self) -> None:
        """Hand the place to the next live waiter, else free it."""
        while self.queue:
            place = self.queue.popleft()
            if not place.done():
                place.set_result(None)
                return
        self.busy -= 1

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {"error": "the server is busy: try again shortly", "retry_after": self.retry_after_s}
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"retry-after", str(self.retry_after_s).encode()),
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _refuse_later(self) -> None:
        self.refused += 1
        self._unlogged += 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_EVERY_S:
            telemetry.logger().warning(
                "busy: requests answered 503",
                extra={"refused": self._unlogged, "active": self.busy, "waiting": len(self.queue)},
            )
            self._unlogged, self._logged_at = 0, now


def _replaying(read: list[Message], receive: Receive) -> Receive:
    pending = collections.deque(read)

    async def replay() -> Message:
        return pending.popleft() if pending else await receive()

    return replay
