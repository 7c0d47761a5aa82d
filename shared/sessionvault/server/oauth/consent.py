"""The consent page: where the owner approves a pending authorization request by pasting one of
their API keys. Server-rendered HTML, no JavaScript, no external resources.

    GET  /consent?request=<id>   the page (400 page for an unknown or expired id)
    POST /consent                request, csrf, api_key, decision=approve|deny
                                 -> 303 to redirect_uri?code=..&state=..&iss=..   (approve)
                                 -> 303 to redirect_uri?error=access_denied&state=..&iss=..   (deny)
                                 -> 200 the page again, "That key was not accepted."   (bad key)

CSRF: the form carries an HMAC of the request id under a key derived from the server's secret
salt (`core.oauth.csrf_token`): stateless, so any Lambda instance can check it; a POST without
the value for that id is a 400. A POST whose Origin is another site's (or "null") is refused too. The key is
read from the form body only: never in a URL, a log line or an error."""

from __future__ import annotations

import html
from collections.abc import Mapping
from urllib.parse import urlsplit

import anyio.to_thread
from mcp.server.auth.provider import construct_redirect_uri
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from sessionvault.core import apikeys, oauth
from sessionvault.db import oauth as store
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server.admission import guard
from sessionvault.server.edge import read_body, replaying
from sessionvault.telemetry import RequestLog

PAGE_HEADERS = {
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    # Not no-referrer: under it a browser sends `Origin: null` with the form, which the Origin
    # check refuses. same-origin keeps the request id in the consent URL from leaving the site.
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}


def page_headers(redirect_uri: str | None = None) -> dict[str, str]:
    """The page's headers. A browser applies `form-action` to the redirect that follows the
    form's POST too, so the pending request's redirect origin is allowed beside 'self'
    (redirect URIs are https or loopback http: always an origin)."""
    target = f" {origin_of(redirect_uri)}" if redirect_uri else ""
    policy = (
        f"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'{target};"
        " frame-ancestors 'none'; base-uri 'none'"
    )
    return {"Content-Security-Policy": policy, **PAGE_HEADERS}


BAD_KEY = "That key was not accepted."
SCOPE_WORDS = {"read": "read your sessions", "write": "save sessions", "delete": "delete sessions"}

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#222}"
    "code{background:#f2f2f2;padding:0 .25rem}input{width:100%;padding:.5rem;margin:.5rem 0 1rem;"
    "box-sizing:border-box}button{padding:.5rem 1.25rem;margin-right:.5rem}.error{color:#b00020}"
)


def _page(title: str, body: str) -> bytes:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{body}</body></html>"
    ).encode()


def render(
    request: store.Pending, client: store.Client, csrf: str, action: str, error: str | None = None
) -> bytes:
    e = html.escape
    name = str(client.info.get("client_name") or "An unnamed application")[: oauth.MAX_CLIENT_NAME_CHARS]
    host = urlsplit(request.redirect_uri).netloc
    scopes = request.scopes or oauth.SCOPES
    asked = "".join(f"<li><code>{e(s)}</code>: {e(SCOPE_WORDS[s])}</li>" for s in scopes if s in SCOPE_WORDS)
    note = (
        "" if request.scopes else "<p>(It asked for no particular scope: it gets what your key allows.)</p>"
    )
    problem = f'<p class="error" role="alert">{e(error)}</p>' if error else ""
    published = (  # a metadata document's client: the host that vouches for it, checked over https
        f"<p>It describes itself at <strong>{e(urlsplit(client.client_id).netloc)}</strong>.</p>"
        if oauth.is_metadata_document_url(client.client_id)
        else ""
    )
    return _page(
        "Authorize access to SessionVault",
        f"<h1>Authorize access to SessionVault</h1>"
        f"<p><strong>{e(name)}</strong> wants to use your SessionVault. "
        f"After you approve, your browser goes back to <strong>{e(host)}</strong>.</p>{published}"
        f"<p>It asks to:</p><ul>{asked}</ul>{note}"
        "<p>It never gets more than the key you paste below allows, and it stops working when "
        "that key is revoked.</p>"
        f"{problem}"
        f'<form method="post" action="{e(action)}">'
        f'<input type="hidden" name="request" value="{e(request.id)}">'
        f'<input type="hidden" name="csrf" value="{e(csrf)}">'
        '<label for="api_key">One of your API keys (sv_live_...)</label>'
        '<input type="password" id="api_key" name="api_key" autocomplete="off" required>'
        '<button type="submit" name="decision" value="approve">Approve</button>'
        '<button type="submit" name="decision" value="deny" formnovalidate>Deny</button>'
        "</form>",
    )


def error_page(message: str) -> bytes:
    return _page("SessionVault", f"<h1>SessionVault</h1><p>{html.escape(message)}</p>")


async def _html(send: Send, status: int, body: bytes, redirect_uri: str | None = None) -> None:
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in page_headers(redirect_uri).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str) -> None:
    headers = [(b"location", location.encode()), (b"content-length", b"0")]
    headers += [(k.lower().encode(), v.encode()) for k, v in page_headers().items()]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


UNKNOWN = "This authorization request is unknown or has expired. Start again from your application."


class Consent:
    def __init__(self, rt: Runtime, failures: guard.AuthFailureLimit | None) -> None:
        self.rt, self.failures = rt, failures

    def _csrf(self, request_id: str) -> str:
        return oauth.csrf_token(self.rt.settings.audit_salt, request_id)

    async def _pending(self, request_id: str) -> tuple[store.Pending, store.Client] | None:
        if not request_id or len(request_id) > 100:
            return None
        return await anyio.to_thread.run_sync(store.pending, self.rt.db, request_id)

    async def handle(self, scope: Scope, receive: Receive, send: Send, base: str, log: RequestLog) -> None:
        log.tool = "oauth/consent"
        method = scope["method"]
        if method == "GET":
            request_id = Request(scope).query_params.get("request", "")
            found = await self._pending(request_id)
            if found is None:
                log.error_class = "validation"
                return await _html(send, 400, error_page(UNKNOWN))
            action = oauth.base_path(base) + oauth.CONSENT_PATH
            page = render(*found, self._csrf(request_id), action)
            return await _html(send, 200, page, found[0].redirect_uri)
        if method != "POST":
            raise Refused(405, b'{"error": "method not allowed"}', "validation", {"Allow": "GET, POST"})
        await self._post(scope, receive, send, base, log)

    async def _post(self, scope: Scope, receive: Receive, send: Send, base: str, log: RequestLog) -> None:
        headers = Request(scope).headers
        origin = headers.get("origin")
        if origin and origin != origin_of(base):
            raise Refused(403, b'{"error": "invalid Origin header"}', "auth", edge_check="origin")
        if self.failures is not None and (wait := self.failures.retry_after(log.ip)):
            raise guard.too_many_failures(wait)
        form = await Request(scope, replaying(await read_body(receive))).form()
        fields: Mapping[str, str] = {k: v for k, v in form.items() if isinstance(v, str)}
        request_id, decision = fields.get("request", ""), fields.get("decision", "")
        if not request_id or not oauth.csrf_ok(
            self.rt.settings.audit_salt, request_id, fields.get("csrf", "")
        ):
            log.error_class = "validation"
            return await _html(send, 400, error_page("This form has expired or was not sent from this page."))
        if decision == "deny":
            denied = await anyio.to_thread.run_sync(store.deny, self.rt.db, request_id)
            if denied is None:
                return await self._unknown(send, log)
            location = construct_redirect_uri(denied[0], error="access_denied", state=denied[1], iss=base)
            return await _redirect(send, location)
        if decision != "approve":
            return await self._unknown(send, log)
        await self._approve(send, base, log, request_id, fields.get("api_key", "").strip())

    async def _approve(self, send: Send, base: str, log: RequestLog, request_id: str, key: str) -> None:
        code = oauth.new_code()
        key_hash = apikeys.digest(key) if apikeys.looks_like_key(key) else oauth.digest("\x00not a key")
        approval: store.Approval = await anyio.to_thread.run_sync(
            store.approve, self.rt.db, request_id, key_hash, oauth.digest(code)
        )
        if approval.status == "bad_key":
            log.auth_reason, log.error_class = "consent_bad_key", "auth"
            found = await self._pending(request_id)
            if found is None:
                return await self._unknown(send, log)
            action = oauth.base_path(base) + oauth.CONSENT_PATH
            page = render(*found, self._csrf(request_id), action, BAD_KEY)
            return await _html(send, 200, page, found[0].redirect_uri)
        if approval.status == "unknown_request" or approval.redirect_uri is None:
            return await self._unknown(send, log)
        if approval.status == "no_scope":
            location = construct_redirect_uri(
                approval.redirect_uri, error="invalid_scope", state=approval.state, iss=base
            )
        else:
            location = construct_redirect_uri(
                approval.redirect_uri, code=code, state=approval.state, iss=base
            )
        await _redirect(send, location)

    async def _unknown(self, send: Send, log: RequestLog) -> None:
        log.error_class = "validation"
        await _html(send, 400, error_page(UNKNOWN))


def origin_of(base: str) -> str:
    """The origin (scheme://host[:port]) of a URL: what a same-origin browser request's Origin is."""
    parts = urlsplit(base)
    return f"{parts.scheme}://{parts.netloc}"
