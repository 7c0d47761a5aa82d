"""Signing in and out. POST /web/signin takes an API key with the sign-in form's CSRF token (bound
to its pre-sign-in cookie), admits it as a tool call would be, and on success sets the sealed
session cookie; a key refused counts toward a local server's per-address limit. POST /web/signout
clears the session cookie (with the session's CSRF token, when the cookie still opens)."""

from __future__ import annotations

import anyio.to_thread
from starlette.types import Send

from sessionvault.core import apikeys
from sessionvault.server.oauth.consent import BAD_KEY
from sessionvault.server.web import cookie as cookie
from sessionvault.server.web.call import Call
from sessionvault.server.web.gate import EXPIRED_FORM, Gate
from sessionvault.server.web.pages.layout import link, message
from sessionvault.server.web.responses import redirect, refusal


async def signin(gate: Gate, call: Call, send: Send) -> None:
    log = call.log
    if not cookie.signin_csrf_ok(gate.secret, call.jar.get(call.cookies.pre, ""), call.form.get("csrf", "")):
        log.error_class = "validation"
        await gate.signin_page(call, send, status=403, error=EXPIRED_FORM)
        return
    if gate.failures is not None and (wait := gate.failures.retry_after(log.ip)):
        text = f"Too many failed sign-ins from this address: try again in {wait} seconds."
        raise refusal(
            429,
            message(None, call.root, "Slow down", text),
            "rate_limit",
            {"Retry-After": str(wait)},
            edge_check="auth_failures",
        )
    key = call.form.get("api_key", "").strip()
    who = None
    if apikeys.looks_like_key(key):
        who = await anyio.to_thread.run_sync(gate.admit, call, apikeys.digest(key))
    else:
        log.auth_reason = "malformed"
    if who is None:
        log.error_class = "auth"
        await gate.signin_page(call, send, error=BAD_KEY)
        return
    if "read" not in who.scopes:
        log.error_class = "scope"
        await gate.signin_page(call, send, error="That key lacks the read scope the web view needs.")
        return
    value, _ = cookie.seal(gate.secret, apikeys.digest(key))
    cookies = [
        call.cookies.set(call.cookies.session, value, cookie.LIFETIME_S),
        call.cookies.clear(call.cookies.pre),
    ]
    await redirect(send, link(call.root, "/"), cookies)


async def signout(gate: Gate, call: Call, send: Send) -> None:
    value = call.jar.get(call.cookies.session, "")
    session = cookie.open_session(gate.secret, value) if value else None
    if session is not None and not cookie.csrf_ok(gate.secret, session, call.form.get("csrf", "")):
        raise refusal(403, message(None, call.root, "Refused", EXPIRED_FORM), "validation")
    await redirect(send, link(call.root, "/"), [call.cookies.clear(call.cookies.session)])
