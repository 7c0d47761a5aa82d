"""One request to the web view as its handlers see it (`Call`: the path, the public URL, the
log line, the cookies and the parsed query and form) and, once admitted, who made it
(`SignedIn`). Error pages read `Call.signed` to keep the navigation for a signed-in caller."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from starlette.types import Scope

from sessionvault.server.web import cookie as cookie
from sessionvault.server.web.pages.layout import Chrome
from sessionvault.service.principal import Principal
from sessionvault.telemetry import RequestLog


@dataclass
class Call:
    """One request to the web view, as the handlers see it."""

    scope: Scope
    path: str  # without the public URL's path
    base: str
    log: RequestLog
    cookies: cookie.Cookies
    jar: dict[str, str]
    query: dict[str, str]
    form: dict[str, str] = field(default_factory=dict)
    signed: SignedIn | None = None  # once admitted: error pages then keep the navigation

    @property
    def root(self) -> str:
        return self.cookies.path.rstrip("/")


@dataclass(frozen=True)
class SignedIn:
    session: cookie.WebSession
    who: Principal
    chrome: Chrome


async def run(work: Callable[[], Any]) -> Any:
    """Blocking work (the vault, the database) off the event loop."""
    return await anyio.to_thread.run_sync(work)
