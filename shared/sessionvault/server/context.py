"""What the edge knows of a request, handed to the surface the route table picks: its headers
(Starlette's `Headers`: `get` reads the first value, `getlist` every one, so a header that must
appear once is checked with `getlist`), this server's public URL (`base`, computed once, after
the Host is checked) and the request's log line. The edge's middleware makes it
(`server/answer.py`, `server/edge_checks.py`); it travels in the ASGI scope, the one value an
ASGI app is handed, under `KEY`, and a route's endpoint receives it as an argument (`Surface`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from sessionvault.telemetry import RequestLog

KEY = "sessionvault.request"


@dataclass
class RequestContext:
    headers: Headers
    log: RequestLog
    base: str = ""  # set by the Host check (`edge_checks.EdgeChecks`): no surface runs before it


def context_of(scope: Scope) -> RequestContext:
    context: RequestContext = scope[KEY]
    return context


Handle = Callable[[Scope, Receive, Send, RequestContext], Awaitable[None]]


class Surface:
    """A route's ASGI endpoint: `handle`, given the request's context. A class, not a function:
    Starlette's `Route` runs a plain ASGI app as it is and wraps only functions."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handle(scope, receive, send, context_of(scope))
