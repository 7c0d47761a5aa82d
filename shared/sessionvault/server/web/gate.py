"""Who a web request comes from: the sealed session cookie opened, and the key's SHA-256 in it
admitted again through the admission statement, as /mcp admits a tool call (tenant, rate limit,
audit row under the page's name), on every signed-in request, so a revoked key ends its web
sessions at once. A caller without a session, or whose key no longer has the read scope, gets
the sign-in page (with its own pre-sign-in cookie) at / and a redirect to it elsewhere. Also the
CSRF check of a signed-in page's forms."""

from __future__ import annotations

import anyio.to_thread
from starlette.types import Send

from sessionvault.db import admission
from sessionvault.db.audit import salted_hash
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server.admission import guard
from sessionvault.server.web import cookie as cookie
from sessionvault.server.web.call import Call, SignedIn
from sessionvault.server.web.pages.layout import Chrome, link, message
from sessionvault.server.web.pages.signin import signin
from sessionvault.server.web.responses import redirect, refusal, send_html
from sessionvault.service.principal import Principal

EXPIRED_FORM = "This form has expired or was not sent from this page. Go back, reload it and try again."
ENDED = "Your sign-in has ended (it lasts 30 minutes, or the key is no longer accepted). Sign in again."


class Gate:
    """The web view's admission: what every handler is given, with the runtime it works on."""

    def __init__(self, rt: Runtime, failures: guard.AuthFailureLimit | None) -> None:
        self.rt, self.failures = rt, failures
        self.secret = rt.settings.audit_salt

    def admit(self, call: Call, key_hash: bytes) -> Principal | None:
        """The admission statement for the key with this SHA-256 (API keys only: no token is
        bound to resource ''), as /mcp admits a tool call; None when the key is not accepted."""
        settings, log = self.rt.settings, call.log
        result = admission.admit(
            self.rt.db,
            key_hash,
            "tool",
            admission.Limits(settings.rate_per_minute, settings.rate_per_day),
            request_id=log.request_id,
            tool=log.tool,
            ip_hash=salted_hash(log.ip, self.secret),
            ua_hash=salted_hash(log.user_agent, self.secret),
        )
        log.audit_id, log.user_id = result.audit_id, result.user_id
        if result.status == "rate_limited":
            text = f"Too many requests: try again in {result.retry_after_s} seconds."
            page = message(None, call.root, "Slow down", text)
            raise refusal(429, page, "rate_limit", {"Retry-After": str(result.retry_after_s)})
        if result.status != "ok" or result.user_id is None or result.wrapped_dek is None:
            log.auth_reason = result.status
            return None
        log.admitted, log.proof = True, result.proof  # the audit row's outcome is written with it
        return Principal(result.user_id, result.wrapped_dek, result.scopes, "web", proof=result.proof)

    async def signed_in(self, call: Call, current: str) -> SignedIn | None:
        value = call.jar.get(call.cookies.session, "")
        session = cookie.open_session(self.secret, value) if value else None
        if session is None:
            return None
        who = await anyio.to_thread.run_sync(self.admit, call, session.key_hash)
        if who is None:
            return None
        if "read" not in who.scopes:  # sign-in refuses such a key; this is a key changed since
            call.log.error_class = "scope"
            return None
        call.signed = SignedIn(session, who, Chrome(call.root, cookie.csrf(self.secret, session), current))
        return call.signed

    async def required(self, call: Call, send: Send, current: str) -> SignedIn | None:
        """The signed-in caller, or (answered here) the sign-in page for / and a redirect to it
        elsewhere, the stale cookie cleared."""
        signed = await self.signed_in(call, current)
        if signed is not None:
            return signed
        had = bool(call.jar.get(call.cookies.session))
        if call.path == "/" and call.scope["method"] == "GET":
            await self.signin_page(call, send, notice=ENDED if had else "")
            return None
        gone = [call.cookies.clear(call.cookies.session)] if had else []
        await redirect(send, link(call.root, "/"), gone)
        return None

    async def signin_page(
        self, call: Call, send: Send, *, status: int = 200, error: str = "", notice: str = ""
    ) -> None:
        """The sign-in page, with its own pre-sign-in cookie (reused while it is valid)."""
        pre = call.jar.get(call.cookies.pre, "")
        cookies = []
        if not cookie.pre_ok(pre):
            pre = cookie.new_pre()
            cookies.append(call.cookies.set(call.cookies.pre, pre, cookie.PRE_LIFETIME_S))
        if call.jar.get(call.cookies.session):
            cookies.append(call.cookies.clear(call.cookies.session))
        body = signin(call.root, cookie.signin_csrf(self.secret, pre), error=error, notice=notice)
        await send_html(send, status, body, cookies)

    async def posted(self, call: Call, send: Send, current: str, confirm: str) -> SignedIn | None:
        """A form that changes something, asked first (`step=confirm` is logged as `confirm`: the
        question changes nothing): the signed-in caller, whose CSRF token must be the form's
        (raised otherwise); None when `required` answered for the caller (signed out)."""
        if call.form.get("step", "") == "confirm":
            call.log.tool = confirm
        signed = await self.required(call, send, current)
        if signed is not None and (refused := self.csrf_refused(call, signed)) is not None:
            raise refused
        return signed

    def csrf_refused(self, call: Call, signed: SignedIn) -> Refused | None:
        if cookie.csrf_ok(self.secret, signed.session, call.form.get("csrf", "")):
            return None
        call.log.error_class = "validation"
        return refusal(403, message(signed.chrome, call.root, "Refused", EXPIRED_FORM), "validation")
