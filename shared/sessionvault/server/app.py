"""The HTTP app: /health, then every other path through the edge, on Starlette's pieces.

    OneAnswer (answer.py)      the request's context and log line; a Refused answered as it says,
                               anything else a 500; the audit outcome, the failure count, the log
    EdgeChecks (edge_checks.py) the path, text the database cannot hold, exactly one allowed Host
    Router (routes.py)         /mcp, the HTTP API, the web view, the OAuth endpoints, else 404

On /mcp everything before admission is free of database work, so nothing unauthenticated can
grow the database there: a request refused before or at authentication leaves no row; the log
line (with `auth_reason` or `edge_check`) and the metrics count it. Every request but /health
ends in exactly one log line and its metrics, whatever happens.

A plain ASGI callable with no lifespan (Mangum would run one on every invocation): the MCP
session manager is started once per event loop instead (`mcp_host`). Built once per process
(the composition of the server's parts is here); nothing per request is kept on it."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from sessionvault.runtime import Runtime
from sessionvault.server import api
from sessionvault.server.admission import admitter as auth
from sessionvault.server.admission import guard
from sessionvault.server.answer import OneAnswer
from sessionvault.server.edge import health
from sessionvault.server.edge_checks import EdgeChecks
from sessionvault.server.mcp.endpoint import McpEndpoint
from sessionvault.server.oauth import endpoints as oauth_server
from sessionvault.server.oauth.consent import Consent
from sessionvault.server.routes import Surfaces
from sessionvault.server.web import views as web


class SessionVaultApp:
    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        settings = runtime.settings
        self.policy = guard.HeaderPolicy.from_settings(settings)
        local = guard.is_local(settings)
        self.failures = guard.AuthFailureLimit(settings.auth_failures_per_minute) if local else None
        self.admitter = auth.Admitter(runtime)
        self.mcp = McpEndpoint(runtime, self.policy, self.failures, self.admitter)
        limits = (settings.rate_per_minute, settings.rate_per_day)
        self.surfaces = Surfaces(
            self.policy,
            self.admitter,
            self.mcp,
            api.Api(runtime.vault, limits),
            web.Web(runtime, self.failures),
            oauth_server.OAuthServer(runtime),
            Consent(runtime, self.failures),
        )
        self.edge: ASGIApp = OneAnswer(
            EdgeChecks(self.surfaces.router(), settings, self.policy), runtime, self.failures
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # not served: an HTTP 403
        elif scope["type"] == "http":
            if (scope["path"].rstrip("/") or "/") == "/health":
                await health(scope, send)
            else:
                await self.edge(scope, receive, send)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
