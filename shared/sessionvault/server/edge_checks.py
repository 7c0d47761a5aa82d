"""The checks every routed request passes before the route table picks its surface (pure ASGI
middleware, inside `answer.OneAnswer`): its path made the route's (without the public URL's
path when the gateway passed it on, and without a trailing slash), text the database cannot
hold refused in the path or query string (`edge.check_text`), then exactly one Host, an
allowed one (421 otherwise), from which this server's public URL is computed once for every
surface (`RequestContext.base`). No body is read and no database is asked before these."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from sessionvault.core import oauth as oauth_core
from sessionvault.server import api
from sessionvault.server.admission import guard
from sessionvault.server.context import context_of
from sessionvault.server.edge import check_text
from sessionvault.settings import Settings


class EdgeChecks:
    def __init__(self, app: ASGIApp, settings: Settings, policy: guard.HeaderPolicy) -> None:
        self.app, self.settings, self.policy = app, settings, policy
        self.prefix = oauth_core.base_path(settings.public_url)  # '' unless under a path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        context = context_of(scope)
        path = self._path(scope)
        check_text(scope, path, api.PREFIX)  # NUL, lone surrogates: deeper, each was a 500
        hosts = context.headers.getlist("host")  # a second Host must not slip past: the SDK reads the first
        if len(hosts) != 1 or not guard.host_allowed(hosts[0], self.policy.hosts):
            raise guard.refusal("host")
        context.base = guard.base_url(self.settings, context.headers)
        await self.app({**scope, "path": path, "root_path": ""}, receive, send)

    def _path(self, scope: Scope) -> str:
        """The request's path without a trailing slash, and without the public URL's path when
        the gateway passed it on (a custom domain mapped under a path)."""
        path: str = scope["path"]
        prefix = self.prefix
        if prefix and (path == prefix or path.startswith(prefix + "/")):
            path = path[len(prefix) :]
        return path.rstrip("/") or "/"
