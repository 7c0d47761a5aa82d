"""The HTTP app: the Host check, then the surface the path names: /mcp (`server/mcp/endpoint.py`:
edge checks, body cap, JSON, admission, the MCP tool), the HTTP API, the web view, the OAuth
endpoints; then the log line.

The OAuth authorization server (`server/oauth/endpoints.py`: well-known metadata, /authorize, /token,
/register, /revoke) and the consent page (`server/oauth/consent.py`) are served here too, after the
same Host check; a POST to /register, /token or /revoke also gets /mcp's Origin and
Content-Type checks (`guard.HeaderPolicy.check_post`), and a form posted to any of them is
read (capped, within the body deadline) and parsed once here first, so that a form Starlette
cannot parse is a 400, never a 500 inside a handler. They are the only unauthenticated paths
that write: registrations and pending requests, each capped in SQL and pruned by the
`prune_oauth` maintenance task.

On /mcp everything before admission is free of database work, so nothing unauthenticated can
grow the database there: a request refused before or at authentication leaves no row; the log line (with
`auth_reason` or `edge_check`) and the metrics count it. Every request but /health ends in
exactly one log line and its metrics, whatever happens: an exception nobody expected becomes a
500 with a generic body, and the log names the exception's type, never its message.

A plain ASGI callable with no lifespan (Mangum would run one on every invocation): the MCP
session manager is started once per event loop instead (`mcp_host`)."""

from __future__ import annotations

import contextlib
import json
import time

import anyio.to_thread
from starlette.types import Message, Receive, Scope, Send

from sessionvault import telemetry
from sessionvault.core import oauth as oauth_core
from sessionvault.db import audit
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server import api
from sessionvault.server.admission import admitter as auth
from sessionvault.server.admission import guard, riding
from sessionvault.server.edge import (
    check_text,
    form_problem,
    headers_of,
    health,
    read_body,
    replaying,
    request_id,
    respond,
)
from sessionvault.server.mcp.endpoint import McpEndpoint
from sessionvault.server.oauth import endpoints as oauth_server
from sessionvault.server.oauth.consent import Consent, error_page, page_headers
from sessionvault.server.web import views as web
from sessionvault.service.principal import Principal

INTERNAL = json.dumps({"error": "internal error"}).encode()
NOT_FOUND = json.dumps({"error": "not found"}).encode()
NOT_ALLOWED = json.dumps({"error": "method not allowed"}).encode()
# Where a POST carries a form (the OAuth endpoints besides /register, and the consent page),
# and which of them a person's browser posts to (an unreadable form gets an HTML page there).
FORM_PATHS = frozenset({"/authorize", "/token", "/revoke", oauth_core.CONSENT_PATH})
BROWSER_PATHS = frozenset({"/authorize", oauth_core.CONSENT_PATH})
UNREADABLE_PAGE = "This form could not be read. Start again from your application."


class _Answer:
    """An ASGI `send` that notes whether the response has begun (no other may follow)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.status = 0  # 0: not begun

    @property
    def started(self) -> bool:
        return self.status != 0

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self._send(message)


class SessionVaultApp:
    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        settings = runtime.settings
        local = guard.is_local(settings)
        self.policy = guard.HeaderPolicy.from_settings(settings)
        self.failures = guard.AuthFailureLimit(settings.auth_failures_per_minute) if local else None
        self.admitter = auth.Admitter(runtime)
        self.mcp = McpEndpoint(runtime, self.policy, self.failures, self.admitter)
        self.oauth = oauth_server.OAuthServer(runtime)
        limits = (runtime.settings.rate_per_minute, runtime.settings.rate_per_day)
        self.api = api.Api(runtime.vault, limits)
        self.consent = Consent(runtime, self.failures)
        self.web = web.Web(runtime, self.failures)
        self.prefix = oauth_core.base_path(settings.public_url)  # '' unless under a path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # not served: an HTTP 403
        elif scope["type"] == "http":
            if (scope["path"].rstrip("/") or "/") == "/health":
                await health(scope, send)
            else:
                await self.handle(scope, receive, send)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One request, one answer, one log line: whatever `_serve` raises is answered here."""
        started = time.perf_counter()
        headers = headers_of(scope)
        log = telemetry.RequestLog(
            request_id=request_id(scope, headers),
            ip=(scope.get("client") or ("", 0))[0],
            user_agent=headers.get("user-agent", ""),
        )
        answer = _Answer(send)
        try:
            try:
                await self._serve(scope, receive, answer, headers, log)
            except Refused as refusal:
                refusal.__traceback__ = None  # a shared instance would grow it with every raise
                log.status, log.error_class = refusal.status, refusal.error_class
                if not answer.started:
                    await respond(answer, refusal.status, refusal.body, refusal.headers)
        except Exception as exc:  # the catch-all: the type is logged, never the message
            log.failure, log.error_class = type(exc).__name__, "internal"
            log.status = answer.status or 500
            if not answer.started:
                with contextlib.suppress(Exception):  # the client may be gone: log it anyway
                    await respond(answer, 500, INTERNAL)
        log.latency_ms = int((time.perf_counter() - started) * 1000)
        if log.admitted and log.error_class:
            await anyio.to_thread.run_sync(self._finish, log)  # a database write: off the loop
        if self.failures is not None:
            if log.auth_reason:
                self.failures.failed(log.ip)
            elif log.admitted:
                self.failures.admitted(guard.key_digest(headers.get("authorization")))
        telemetry.emit(log)

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str], log: telemetry.RequestLog
    ) -> None:
        path = self._path(scope)
        check_text(scope, path, api.PREFIX, log)  # NUL, lone surrogates: deeper, each was a 500
        if path.startswith(api.PREFIX + "/"):
            await self._serve_api(scope, receive, send, headers, log, path.removeprefix(api.PREFIX))
            return
        if web.serves(path):
            await self._serve_web(scope, receive, send, headers, log, path)
            return
        if path != "/mcp":
            await self._serve_oauth(scope, receive, send, headers, log, path)
            return
        if scope["method"] != "POST":
            if auth.bearer_token(headers.get("authorization")) is None:
                # The 401 first, as for a POST: clients probe with GET or HEAD to find the
                # resource metadata (RFC 9728) before they have a token.
                self._check_host(headers, log)
                log.auth_reason = "missing"
                raise auth.refused(guard.base_url(self.rt.settings, headers))
            # Stateless JSON mode: no SSE stream to open (GET) and no session to end (DELETE).
            raise Refused(405, NOT_ALLOWED, "validation", {"Allow": "POST"})
        await self.mcp.serve(scope, receive, send, headers, log)

    async def _serve_api(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        log: telemetry.RequestLog,
        path: str,
    ) -> None:
        """The HTTP API (`server/api.py`): the edge checks and the admission of /mcp (riding on
        the call's transaction, as a tool call's, where the answer is small enough to hold),
        then the route's own scope check."""
        self._check_host(headers, log)
        route = api.route_of(scope["method"], path)
        if route is None:
            raise api.unrouted(path)
        log.tool = route.tool
        if scope["method"] != "GET":  # what changes data: /mcp's Origin check, and its body's type
            raw = scope["headers"]
            check = (
                self.policy.check_post(raw, api.BODY_TYPE)
                if scope["method"] == "POST"
                else self.policy.check_origins(raw)
            )
            if check is not None:
                log.edge_check = check
                raise guard.refusal(check, api.BODY_TYPE)

        async def run(who: Principal, out: Send) -> None:
            answer = _Answer(out)
            failed = await self.api.handle(route, who, scope, receive, answer)
            log.error_class = failed or None
            log.status = answer.status

        holdable = route.scope if route.holdable else None  # its answer can be held meanwhile
        await riding.ride_or_admit(self.admitter, headers, holdable, "tool", run, send, log)

    async def _serve_web(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        log: telemetry.RequestLog,
        path: str,
    ) -> None:
        """The web view (`server/web/`): the Host check first, as everywhere; its forms' Origin,
        Content-Type and CSRF checks, and the admission of its session cookie, are its own."""
        self._check_host(headers, log)
        base = guard.base_url(self.rt.settings, headers)
        await self.web.handle({**scope, "path": path}, receive, send, base, log, path)

    def _path(self, scope: Scope) -> str:
        """The request's path without a trailing slash, and without the public URL's path when
        the gateway passed it on (a custom domain mapped under a path)."""
        path: str = scope["path"]
        prefix = self.prefix
        if prefix and (path == prefix or path.startswith(prefix + "/")):
            path = path[len(prefix) :]
        return path.rstrip("/") or "/"

    async def _serve_oauth(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        log: telemetry.RequestLog,
        path: str,
    ) -> None:
        """The OAuth endpoints and the consent page (no body read or database work before the
        Host is checked, as for /mcp)."""
        self._check_host(headers, log)
        base = guard.base_url(self.rt.settings, headers)
        routed = {**scope, "path": path}
        consent = path == oauth_core.CONSENT_PATH
        if consent:
            log.tool = "oauth/consent"
        elif path in oauth_server.ENDPOINTS:
            log.tool = oauth_server.ENDPOINTS[path][1]
        if scope["method"] == "POST" and path in guard.POSTED:
            expected = guard.POSTED[path]
            check = self.policy.check_post(scope["headers"], expected)
            if check is not None:
                log.edge_check = check
                raise guard.refusal(check, expected)
        if scope["method"] == "POST" and path in FORM_PATHS:
            body = await read_body(receive)
            if problem := await form_problem(routed, body):
                raise _unreadable(problem, page=path in BROWSER_PATHS)
            receive = replaying(body)  # the handler reads the same bytes again
        if consent:
            await self.consent.handle(routed, receive, send, base, log)
        elif self.oauth.serves(path, base):
            await self.oauth.handle(routed, receive, send, base, log)
        else:
            raise Refused(404, NOT_FOUND, "validation")

    def _check_host(self, headers: dict[str, str], log: telemetry.RequestLog) -> None:
        """The Host alone, where a URL is built from it and no body is read."""
        if not guard.host_allowed(headers.get("host", ""), self.policy.hosts):
            log.edge_check = "host"
            raise guard.refusal("host")

    def _finish(self, log: telemetry.RequestLog) -> None:
        """The outcome of an admitted call that failed, on the row admission wrote. Requests
        refused before or at admission get no row from here: their log line counts them."""
        if log.user_id is None or log.audit_id is None:
            return
        try:
            audit.finish(self.rt.db, log.user_id, log.audit_id, log)
        except Exception as exc:  # the response is already sent; losing the row must be loud
            log.failure = f"audit write failed: {type(exc).__name__}"


def _unreadable(problem: str, *, page: bool) -> Refused:
    """A form that cannot be parsed, or holds text the database cannot: an HTML error page (as
    the consent page and /authorize show a person), else OAuth's JSON error (RFC 6749, 5.2)."""
    if page:
        headers = {"Content-Type": "text/html; charset=utf-8", **page_headers()}
        return Refused(400, error_page(UNREADABLE_PAGE), "validation", headers)
    body = json.dumps({"error": "invalid_request", "error_description": problem}).encode()
    return Refused(400, body, "validation", {"Cache-Control": "no-store"})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
