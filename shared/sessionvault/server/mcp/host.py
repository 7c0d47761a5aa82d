"""The MCP SDK's Streamable HTTP session manager, started once per event loop; and the
middleware that keeps every handler's failure an MCP error.

The manager can run only once per instance, and it must keep running while requests use it.
Its usual home, an ASGI lifespan, is wrong here: Mangum runs the lifespan on every invocation.
Both hosts drive one long-lived asyncio loop (uvicorn; Mangum reuses its loop across warm
invocations), so a task started on a loop's first request holds the manager open for the
loop's life, and every later request reuses it: no transport manager, task group or server
lifespan rebuilt per request. Only 2026-07-28 requests use it; a 2025-era one is answered
without it (`exchange.py`: the manager's path for those built a transport per request).

`mcp_errors_only`: the SDK answers an exception that is not an `MCPError` (or a pydantic
`ValidationError`, its invalid params) with JSON-RPC code 0 and the exception's message, and
logs its traceback, message included: caller text (a prompt name, a URI) would reach the log.
Our handlers raise `MCPError`s for what the caller got wrong; anything else is a bug, answered
here as an internal error (-32603) and logged by type and place (file, line, function) only:
no message, no traceback (its lines could quote anything)."""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Callable
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR
from pydantic import ValidationError

from sessionvault.server.edge import PROTOCOL_METHODS
from sessionvault.server.mcp.call_state import current_call

log = logging.getLogger(__name__)
# The SDK's transport check logs a refused Host or Origin verbatim at WARNING: caller text in a
# log line. `guard.HeaderPolicy` refuses those first; should the two ever disagree (the SDK
# compares case-sensitively), its refusal is still answered, but not logged.
logging.getLogger("mcp.server.transport_security").setLevel(logging.ERROR)


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


async def mcp_errors_only(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """A `Server.middleware`: the rest of the chain, with any exception but an MCP error (or
    the SDK's own invalid-params `ValidationError`) turned into an internal error."""
    try:
        return await call_next(ctx)
    except (MCPError, ValidationError):
        raise
    except Exception as exc:
        state = current_call.get(None)
        if state is not None:
            state.error_class = "internal"
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
        log.error(
            "mcp handler failed",
            extra={
                "method": ctx.method if ctx.method in PROTOCOL_METHODS else "other",
                "error_type": type(exc).__name__,
                "where": where,
            },
        )
        if ctx.request_id is None:  # a notification: nobody to answer, nothing more to log
            return None
        raise MCPError(INTERNAL_ERROR, "internal error") from None
