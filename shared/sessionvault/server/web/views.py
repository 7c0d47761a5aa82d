"""The web view: what each path answers (docs/web.md).

    GET  /                     sessions by repo, with a search box (signed out: the sign-in page)
    POST /web/signin           api_key, csrf -> 303 to / with the session cookie
    POST /web/signout          csrf -> 303 to /, the cookie cleared
    GET  /web/session          name, version: one version as readable sections
    GET  /web/versions         name, a, b: the versions kept and a diff between any two
    GET  /web/handoffs         every offer and its state (open, accepted by whom and when, expired)
    GET  /web/activity         the account's recent audit rows (protocol messages folded), calls per day
    GET  /web/clients          per client: last checkpoint, save and handoff; the handoffs between them
    GET  /web/keys             the account's keys
    POST /web/keys/revoke      key, csrf, step=confirm (a confirmation page) | step=revoke (needs delete)
    POST /web/keys/create      label, scope (each), csrf, step=confirm | step=create: the key shown once
                               (needs delete; at most the signed-in key's scopes)
    GET  /web/members          workspace: its members, for its owners (docs/teams.md)
    POST /web/members/change   workspace, action=add|role|remove, person, role, csrf, step=confirm | apply

The list, session and versions pages take `workspace` (a workspace the person belongs to; absent:
their personal space); one they do not belong to reads as one that does not exist (404).

Every signed-in request is admitted again through the admission statement (the key's SHA-256
from the sealed cookie: tenant, rate limit, audit row under the page's name) and needs the read
scope; revoking a key needs the delete scope. Every page has the consent page's headers (strict
CSP with no script at all, frame-ancestors 'none', no-store); every POST must carry a form, no
foreign Origin or Sec-Fetch-Site, and the CSRF token of its session (or of the sign-in form).

This module is the request handling: the routes, a request parsed into a `Call`, its form read
(`form.py`), the handler run (`handlers/`, admitted by `admission.py`) and its errors turned
into pages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs

import psycopg
import psycopg_pool
from starlette.types import Receive, Scope, Send

from sessionvault.errors import ErrorClass, NotFound, VaultError, WorkspaceDenied
from sessionvault.runtime import Runtime
from sessionvault.server.admission import guard
from sessionvault.server.web import cookie as cookie
from sessionvault.server.web.call import Call
from sessionvault.server.web.form import read_form
from sessionvault.server.web.gate import Gate
from sessionvault.server.web.handlers import (
    clients,
    history,
    keys,
    listing,
    members,
    session,
    signin,
    versions,
)
from sessionvault.server.web.pages.layout import message
from sessionvault.server.web.responses import refusal
from sessionvault.telemetry import RequestLog

PREFIX = "/web"
# (method, path) -> the name the log line and the audit row give the request.
ROUTES: dict[tuple[str, str], str] = {
    ("GET", "/"): "web/sessions",
    ("POST", PREFIX + "/signin"): "web/signin",
    ("POST", PREFIX + "/signout"): "web/signout",
    ("GET", PREFIX + "/session"): "web/session",
    ("GET", PREFIX + "/versions"): "web/versions",
    ("GET", PREFIX + "/handoffs"): "web/handoffs",
    ("GET", PREFIX + "/activity"): "web/activity",
    ("GET", PREFIX + "/clients"): "web/clients",
    ("GET", PREFIX + "/keys"): "web/keys",
    ("POST", PREFIX + "/keys/revoke"): "web/keys.revoke",
    ("POST", PREFIX + "/keys/create"): "web/keys.create",
    ("GET", PREFIX + "/members"): "web/members",
    ("POST", PREFIX + "/members/change"): "web/members.change",
}
PATHS = frozenset(path for _, path in ROUTES)
DB_ERRORS = (psycopg.Error, psycopg_pool.PoolTimeout)
STATUS = {"validation": 400, "scope": 403, "quota": 409, "provider": 503, "db": 503, "timeout": 503}

Handler = Callable[[Gate, Call, Send], Awaitable[None]]
HANDLERS: dict[str, Handler] = {
    "/": listing.home,
    PREFIX + "/signin": signin.signin,
    PREFIX + "/signout": signin.signout,
    PREFIX + "/session": session.session_page,
    PREFIX + "/versions": versions.versions_page,
    PREFIX + "/handoffs": history.handoffs_page,
    PREFIX + "/activity": history.activity_page,
    PREFIX + "/clients": clients.clients_page,
    PREFIX + "/keys": keys.keys_page,
    PREFIX + "/keys/revoke": keys.revoke,
    PREFIX + "/keys/create": keys.create,
    PREFIX + "/members": members.members_page,
    PREFIX + "/members/change": members.change,
}


def serves(path: str) -> bool:
    """The paths this view answers (a known one, or a 404 of its own under /web)."""
    return path == "/" or path == PREFIX or path.startswith(PREFIX + "/")


class Web:
    def __init__(self, rt: Runtime, failures: guard.AuthFailureLimit | None) -> None:
        self.gate = Gate(rt, failures)

    async def handle(
        self, scope: Scope, receive: Receive, send: Send, base: str, log: RequestLog, path: str
    ) -> None:
        """Answer `path` (the app checked the Host; `base` is this server's public URL)."""
        method = scope["method"]
        tool = ROUTES.get((method, path))
        cookies = cookie.Cookies.for_base(base)
        root = cookies.path.rstrip("/")
        if tool is None:
            allowed = sorted(m for m, p in ROUTES if p == path)
            if allowed:
                page = message(None, root, "Not allowed", "This page does not take that method.")
                raise refusal(405, page, "validation", {"Allow": ", ".join(allowed)})
            raise refusal(404, message(None, root, "Not found", "There is no such page."), "validation")
        log.tool = tool
        raw = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        query = {k: v[-1] for k, v in raw.items()}
        jar = cookie.parse_cookies(scope["headers"])
        call = Call(scope, path, base, log, cookies, jar, query)
        if method == "POST":
            call.form = await read_form(call, receive)
        try:
            await HANDLERS[path](self.gate, call, send)
        except VaultError as exc:
            status = 404 if isinstance(exc, NotFound) else STATUS.get(exc.error_class, 400)
            if isinstance(exc, WorkspaceDenied):  # not a member reads as no such workspace, as on the API
                status = 404 if exc.role is None else 403
            log.error_class = exc.error_class
            chrome = call.signed.chrome if call.signed else None
            page = message(chrome, call.root, "That did not work", str(exc))
            raise refusal(status, page, exc.error_class) from None
        except DB_ERRORS as exc:
            log.failure = type(exc).__name__
            cls: ErrorClass = "timeout" if isinstance(exc, psycopg.errors.QueryCanceled) else "db"
            text = "The database could not answer just now. Try again in a few seconds."
            raise refusal(
                503,
                message(None, call.root, "Temporarily unavailable", text),
                cls,
                {"Retry-After": "5"},
            ) from None
