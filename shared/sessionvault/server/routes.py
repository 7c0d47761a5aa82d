"""The route table (Starlette's `Router`): which surface answers which path, each given the
request's context (`server/context.py`) once the edge has checked it (`edge_checks.py`).

    /mcp                    the MCP endpoint (`server/mcp/endpoint.py`): POST only
    /api/v1/...             the HTTP API (`server/api.py`), admitted as /mcp's tool calls
    /, /web, /web/...       the web view (`server/web/views.py`), signed in by its own cookie
    /authorize, /token, /register, /revoke, /.well-known/...
                            the OAuth authorization server (`server/oauth/endpoints.py`)
    /oauth/consent          the consent page (`server/oauth/consent.py`)
    anything else           404

Methods are each surface's to judge (their 405s are JSON and name what is allowed), and a
trailing slash was taken off at the edge: the router neither redirects nor answers 405 itself.
A POST to /register, /token or /revoke gets /mcp's Origin and Content-Type checks
(`guard.HeaderPolicy.check_post`); a form posted to the OAuth endpoints or the consent page is
read (capped, within the body deadline) and parsed once here first, so that a form Starlette
cannot parse is a 400, never a 500 inside a handler. They are the only unauthenticated paths
that write: registrations and pending requests, each capped in SQL and pruned by the
`prune_oauth` maintenance task."""

from __future__ import annotations

import json

from starlette.routing import Mount, Route, Router
from starlette.types import Receive, Scope, Send

from sessionvault.core import oauth as oauth_core
from sessionvault.errors import Refused
from sessionvault.server import api
from sessionvault.server.admission import admitter as auth
from sessionvault.server.admission import guard, riding
from sessionvault.server.context import RequestContext, Surface
from sessionvault.server.edge import form_problem, read_body, replaying
from sessionvault.server.mcp.endpoint import McpEndpoint
from sessionvault.server.oauth import endpoints as oauth_server
from sessionvault.server.oauth.consent import Consent, error_page, page_headers
from sessionvault.server.web import views as web
from sessionvault.service.principal import Principal

NOT_FOUND = json.dumps({"error": "not found"}).encode()
NOT_ALLOWED = json.dumps({"error": "method not allowed"}).encode()
# Where a POST carries a form (the OAuth endpoints besides /register, and the consent page),
# and which of them a person's browser posts to (an unreadable form gets an HTML page there).
FORM_PATHS = frozenset({"/authorize", "/token", "/revoke", oauth_core.CONSENT_PATH})
BROWSER_PATHS = frozenset({"/authorize", oauth_core.CONSENT_PATH})
UNREADABLE_PAGE = "This form could not be read. Start again from your application."


class Surfaces:
    """The four surfaces, each as its route's endpoint sees it."""

    def __init__(
        self,
        policy: guard.HeaderPolicy,
        admitter: auth.Admitter,
        mcp: McpEndpoint,
        http_api: api.Api,
        web_view: web.Web,
        oauth: oauth_server.OAuthServer,
        consent: Consent,
    ) -> None:
        self.policy, self.admitter, self.mcp = policy, admitter, mcp
        self.api, self.web, self.oauth, self.consent = http_api, web_view, oauth, consent

    def router(self) -> Router:
        oauth, web_view = Surface(self.serve_oauth), Surface(self.serve_web)
        return Router(
            routes=[
                Route("/mcp", Surface(self.serve_mcp)),
                Mount(api.PREFIX, Surface(self.serve_api)),
                Route("/", web_view),
                Route(web.PREFIX, web_view),  # the web view's own 404 page, as under it
                Mount(web.PREFIX, web_view),
                *(Route(path, oauth) for path in (*oauth_server.ENDPOINTS, oauth_core.CONSENT_PATH)),
                Mount("/.well-known", oauth),
            ],
            redirect_slashes=False,
            default=Surface(self.serve_oauth),  # its 404, after the same checks as a known path
        )

    async def serve_mcp(self, scope: Scope, receive: Receive, send: Send, context: RequestContext) -> None:
        if scope["method"] != "POST":
            if auth.bearer_token(context.headers.get("authorization")) is None:
                # The 401 first, as for a POST: clients probe with GET or HEAD to find the
                # resource metadata (RFC 9728) before they have a token.
                raise auth.refused(context.base, "missing")
            # Stateless JSON mode: no SSE stream to open (GET) and no session to end (DELETE).
            raise Refused(405, NOT_ALLOWED, "validation", {"Allow": "POST"})
        await self.mcp.serve(scope, receive, send, context)

    async def serve_api(self, scope: Scope, receive: Receive, send: Send, context: RequestContext) -> None:
        """The HTTP API (`server/api.py`): the edge checks and the admission of /mcp (riding on
        the call's transaction, as a tool call's, where the answer is small enough to hold),
        then the route's own scope check."""
        log = context.log
        path = scope["path"].removeprefix(api.PREFIX)  # the Mount matched it
        route = api.route_of(scope["method"], path)
        if route is None:
            raise api.unrouted(path)
        log.tool = route.tool
        if scope["method"] != "GET":  # what changes data: /mcp's Origin check, and its body's type
            headers = context.headers
            check = (
                self.policy.check_post(headers, api.BODY_TYPE)
                if scope["method"] == "POST"
                else self.policy.check_origins(headers)
            )
            if check is not None:
                raise guard.refusal(check, api.BODY_TYPE)

        async def run(who: Principal, out: Send) -> None:
            log.error_class = await self.api.handle(route, who, scope, receive, out) or None

        holdable = route.scope if route.holdable else None  # its answer can be held meanwhile
        await riding.ride_or_admit(self.admitter, context, holdable, "tool", run, send)

    async def serve_web(self, scope: Scope, receive: Receive, send: Send, context: RequestContext) -> None:
        """The web view (`server/web/`): its forms' Origin, Content-Type and CSRF checks, and the
        admission of its session cookie, are its own."""
        await self.web.handle(scope, receive, send, context.base, context.log, scope["path"])

    async def serve_oauth(self, scope: Scope, receive: Receive, send: Send, context: RequestContext) -> None:
        """The OAuth endpoints and the consent page; the 404 of any other path."""
        path, log, base = scope["path"], context.log, context.base
        consent = path == oauth_core.CONSENT_PATH
        if consent:
            log.tool = "oauth/consent"
        elif path in oauth_server.ENDPOINTS:
            log.tool = oauth_server.ENDPOINTS[path][1]
        if scope["method"] == "POST" and path in guard.POSTED:
            expected = guard.POSTED[path]
            check = self.policy.check_post(context.headers, expected)
            if check is not None:
                raise guard.refusal(check, expected)
        if scope["method"] == "POST" and path in FORM_PATHS:
            body = await read_body(receive)
            if problem := await form_problem(scope, body):
                raise _unreadable(problem, page=path in BROWSER_PATHS)
            receive = replaying(body)  # the handler reads the same bytes again
        if consent:
            await self.consent.handle(scope, receive, send, base, log)
        elif self.oauth.serves(path, base):
            await self.oauth.handle(scope, receive, send, base, log)
        else:
            raise Refused(404, NOT_FOUND, "validation")


def _unreadable(problem: str, *, page: bool) -> Refused:
    """A form that cannot be parsed, or holds text the database cannot: an HTML error page (as
    the consent page and /authorize show a person), else OAuth's JSON error (RFC 6749, 5.2)."""
    if page:
        headers = {"Content-Type": "text/html; charset=utf-8", **page_headers()}
        return Refused(400, error_page(UNREADABLE_PAGE), "validation", headers)
    body = json.dumps({"error": "invalid_request", "error_description": problem}).encode()
    return Refused(400, body, "validation", {"Cache-Control": "no-store"})
