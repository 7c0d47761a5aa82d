"""The MCP SDK's Streamable HTTP session manager, started once per event loop.

The manager can run only once per instance, and it must keep running while requests use it.
Its usual home, an ASGI lifespan, is wrong here: Mangum runs the lifespan on every invocation.
Both hosts drive one long-lived asyncio loop (uvicorn; Mangum reuses its loop across warm
invocations), so a task started on a loop's first request holds the manager open for the
loop's life, and every later request reuses it: no transport manager, task group or server
lifespan rebuilt per request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager


class ManagerPerLoop:
    def __init__(self, make: Callable[[], StreamableHTTPSessionManager]) -> None:
        self._make = make
        self._loop: asyncio.AbstractEventLoop | None = None
        self._manager: StreamableHTTPSessionManager | None = None
        self._ready = asyncio.Event()
        self._holder: asyncio.Task[None] | None = None

    async def get(self) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._holder is None or self._holder.done():
            # A new loop (or a holder that ended): start a fresh manager on this one.
            self._loop, self._manager, self._ready = loop, self._make(), asyncio.Event()
            self._holder = loop.create_task(self._hold(self._manager, self._ready))
        await self._ready.wait()
        if self._holder.done():  # it ended while starting: its exception is the answer
            self._holder.result()
        assert self._manager is not None
        return self._manager

    @staticmethod
    async def _hold(manager: StreamableHTTPSessionManager, ready: asyncio.Event) -> None:
        try:
            async with manager.run():
                ready.set()
                await asyncio.Event().wait()  # until the loop cancels it at shutdown
        finally:
            ready.set()  # never leave a request waiting on a manager that failed to start
