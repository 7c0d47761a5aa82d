"""The web view: what each path answers (docs/web.md).

    GET  /                     sessions by repo, with a search box (signed out: the sign-in page)
    POST /web/signin           api_key, csrf -> 303 to / with the session cookie
    POST /web/signout          csrf -> 303 to /, the cookie cleared
    GET  /web/session          name, version: one version as readable sections
    GET  /web/versions         name, a, b: the versions kept and a diff between any two
    GET  /web/handoffs         every offer and its state (open, accepted by whom and when, expired)
    GET  /web/activity         the account's recent audit rows
    GET  /web/keys             the account's keys
    POST /web/keys/revoke      key, csrf, step=confirm (a confirmation page) | step=revoke (needs delete)

Every signed-in request is admitted again through the admission statement (the key's SHA-256
from the sealed cookie: tenant, rate limit, audit row under the page's name) and needs the read
scope; revoking a key needs the delete scope. Every page has the consent page's headers (strict
CSP with no script at all, frame-ancestors 'none', no-store); every POST must carry a form, no
foreign Origin or Sec-Fetch-Site, and the CSRF token of its session (or of the sign-in form)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import anyio.to_thread
import psycopg
import psycopg_pool
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from sessionvault.core import apikeys, portability, records
from sessionvault.core.apikeys import scope_hint
from sessionvault.core.vault import Principal
from sessionvault.db import admission, handoffs
from sessionvault.db import web as store
from sessionvault.db.audit import salted_hash
from sessionvault.errors import ErrorClass, ProviderUnavailable, Refused, ValidationFailed, VaultError
from sessionvault.runtime import Runtime
from sessionvault.server import guard
from sessionvault.server.consent import BAD_KEY, origin_of, page_headers
from sessionvault.server.edge import FORM, form_problem, media_type, read_body, replaying
from sessionvault.server.web import diff, pages
from sessionvault.server.web import session as cookie
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
    ("GET", PREFIX + "/keys"): "web/keys",
    ("POST", PREFIX + "/keys/revoke"): "web/keys.revoke",
}
PATHS = frozenset(path for _, path in ROUTES)
REVOKE_SCOPE = "delete"  # revoking a key cannot be undone, like a delete: docs/web.md
LISTED = 100  # sessions a page lists (older ones: the next page)
SEARCHED = 20
ACTIVITY_ROWS = 100
OFFERS = 200
DB_ERRORS = (psycopg.Error, psycopg_pool.PoolTimeout)
HTML = "text/html; charset=utf-8"
EXPIRED_FORM = "This form has expired or was not sent from this page. Go back, reload it and try again."
ENDED = "Your sign-in has ended (it lasts 30 minutes, or the key is no longer accepted). Sign in again."
NO_SEMANTIC = (
    "Semantic search is unavailable on this server (no embedding provider answered): showing the "
    "recent sessions whose name or preview contains your words."
)
STATUS = {"validation": 400, "scope": 403, "quota": 409, "provider": 503, "db": 503, "timeout": 503}


def serves(path: str) -> bool:
    """The paths this view answers (a known one, or a 404 of its own under /web)."""
    return path == "/" or path == PREFIX or path.startswith(PREFIX + "/")


def refusal(
    status: int, body: bytes, error_class: ErrorClass, headers: dict[str, str] | None = None
) -> Refused:
    """An HTML answer the app's catch of `Refused` sends as it is."""
    return Refused(status, body, error_class, {"Content-Type": HTML, **page_headers(), **(headers or {})})


class NotFound(VaultError):
    error_class = "validation"


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
    chrome: pages.Chrome


Handler = Callable[["Web", Call, Send], Awaitable[None]]


class Web:
    def __init__(self, rt: Runtime, failures: guard.AuthFailureLimit | None) -> None:
        self.rt, self.failures = rt, failures
        self.secret = rt.settings.audit_salt

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
                page = pages.message(None, root, "Not allowed", "This page does not take that method.")
                raise refusal(405, page, "validation", {"Allow": ", ".join(allowed)})
            raise refusal(404, pages.message(None, root, "Not found", "There is no such page."), "validation")
        log.tool = tool
        raw = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        query = {k: v[-1] for k, v in raw.items()}
        jar = cookie.parse_cookies(scope["headers"])
        call = Call(scope, path, base, log, cookies, jar, query)
        if method == "POST":
            call.form = await self._form(call, receive)
        try:
            await HANDLERS[path](self, call, send)
        except VaultError as exc:
            status = 404 if isinstance(exc, NotFound) else STATUS.get(exc.error_class, 400)
            log.status, log.error_class = status, exc.error_class
            chrome = call.signed.chrome if call.signed else None
            page = pages.message(chrome, call.root, "That did not work", str(exc))
            raise refusal(status, page, exc.error_class) from None
        except DB_ERRORS as exc:
            log.failure = type(exc).__name__
            cls: ErrorClass = "timeout" if isinstance(exc, psycopg.errors.QueryCanceled) else "db"
            text = "The database could not answer just now. Try again in a few seconds."
            raise refusal(
                503,
                pages.message(None, call.root, "Temporarily unavailable", text),
                cls,
                {"Retry-After": "5"},
            ) from None

    # --- the request's edge -----------------------------------------------------------------

    async def _form(self, call: Call, receive: Receive) -> dict[str, str]:
        """A POST's form, after the checks a browser form must pass: exactly one Content-Type, a
        urlencoded form; no Origin but this server's (every one, if several came); no
        Sec-Fetch-Site but same-origin; a body within the form cap that parses."""
        headers, log, root = call.scope["headers"], call.log, call.root
        types = guard.values_of(headers, b"content-type")
        if len(types) != 1 or media_type(types[0]) != FORM:
            log.edge_check = "content_type"
            raise refusal(
                415,
                pages.message(None, root, "Not a form", "Send this page's own form."),
                "validation",
                {"Accept": FORM},
            )
        own = origin_of(call.base)
        origins = guard.values_of(headers, b"origin")
        sites = guard.values_of(headers, b"sec-fetch-site")
        if any(o != own for o in origins) or any(s != "same-origin" for s in sites):
            log.edge_check = "origin"
            raise refusal(
                403, pages.message(None, root, "Refused", "This form was sent from another site."), "auth"
            )
        body = await read_body(receive)
        if await form_problem(call.scope, body):
            raise refusal(
                400,
                pages.message(None, root, "Unreadable form", "This form could not be read."),
                "validation",
            )
        form = await Request(call.scope, replaying(body)).form()
        return {k: v for k, v in form.items() if isinstance(v, str)}

    def _admit(self, call: Call, key_hash: bytes) -> Principal | None:
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
            page = pages.message(None, call.root, "Slow down", text)
            raise refusal(429, page, "rate_limit", {"Retry-After": str(result.retry_after_s)})
        if result.status != "ok" or result.user_id is None or result.wrapped_dek is None:
            log.auth_reason = result.status
            return None
        log.admitted = True
        return Principal(result.user_id, result.wrapped_dek, result.scopes, "web")

    async def _signed_in(self, call: Call, current: str) -> SignedIn | None:
        value = call.jar.get(call.cookies.session, "")
        session = cookie.open_session(self.secret, value) if value else None
        if session is None:
            return None
        who = await anyio.to_thread.run_sync(self._admit, call, session.key_hash)
        if who is None:
            return None
        if "read" not in who.scopes:  # sign-in refuses such a key; this is a key changed since
            call.log.error_class = "scope"
            return None
        call.signed = SignedIn(
            session, who, pages.Chrome(call.root, cookie.csrf(self.secret, session), current)
        )
        return call.signed

    async def _required(self, call: Call, send: Send, current: str) -> SignedIn | None:
        """The signed-in caller, or (answered here) the sign-in page for / and a redirect to it
        elsewhere, the stale cookie cleared."""
        signed = await self._signed_in(call, current)
        if signed is not None:
            return signed
        had = bool(call.jar.get(call.cookies.session))
        if call.path == "/" and call.scope["method"] == "GET":
            await self._signin(call, send, notice=ENDED if had else "")
            return None
        gone = [call.cookies.clear(call.cookies.session)] if had else []
        call.log.status = 303
        await _redirect(send, pages.link(call.root, "/"), gone)
        return None

    async def _signin(
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
        call.log.status = status
        body = pages.signin(call.root, cookie.signin_csrf(self.secret, pre), error=error, notice=notice)
        await _html(send, status, body, cookies)

    def _csrf_refused(self, call: Call, signed: SignedIn) -> Refused | None:
        if cookie.csrf_ok(self.secret, signed.session, call.form.get("csrf", "")):
            return None
        call.log.error_class = "validation"
        return refusal(403, pages.message(signed.chrome, call.root, "Refused", EXPIRED_FORM), "validation")

    # --- pages -------------------------------------------------------------------------------

    async def home(self, call: Call, send: Send) -> None:
        signed = await self._required(call, send, "sessions")
        if signed is None:
            return
        q, repo, cursor = (
            call.query.get("q", "").strip(),
            call.query.get("repo", ""),
            call.query.get("cursor", ""),
        )
        listing = await self._run(
            lambda: self.rt.vault.list(
                signed.who, records.parse(records.ListArgs, {"repo": repo, "limit": LISTED, "cursor": cursor})
            )
        )
        shown: list[dict[str, Any]] = listing["sessions"]
        canonical = records.parse(records.ListArgs, {"repo": repo}).repo
        every = shown
        if canonical or cursor:  # the repo choices come from the newest sessions of every repo
            every = (await self._run(lambda: self.rt.vault.list(signed.who, records.ListArgs(limit=LISTED))))[
                "sessions"
            ]
        repos = list(dict.fromkeys(s["repo"] for s in every))
        form = pages.search_form(signed.chrome, q, canonical, repos)
        if q:
            hits, notice = await self._search(signed.who, q, canonical, shown)
            body = pages.search_results(signed.chrome, q, hits, form=form, notice=notice)
        else:
            groups: dict[str, list[dict[str, Any]]] = {}
            for s in shown:
                groups.setdefault(s["repo"], []).append(s)
            older = (
                pages.link(call.root, "/", repo=canonical, cursor=listing["next_cursor"])
                if listing["next_cursor"]
                else ""
            )
            body = pages.sessions(signed.chrome, list(groups.items()), form=form, repo=canonical, older=older)
        await self._page(call, send, body)

    async def _search(
        self, who: Principal, q: str, repo: str, recent: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], str]:
        args = records.parse(records.SearchArgs, {"query": q, "repo": repo, "max_results": SEARCHED})
        try:
            found = await self._run(lambda: self.rt.vault.search(who, args))
        except ProviderUnavailable:
            words = q.lower().split()
            hits = [
                s for s in recent if all(w in f"{s['name']} {s.get('preview', '')}".lower() for w in words)
            ]
            return hits[:SEARCHED], NO_SEMANTIC
        results: list[dict[str, Any]] = found["results"]
        return results, ""

    async def session_page(self, call: Call, send: Send) -> None:
        signed = await self._required(call, send, "sessions")
        if signed is None:
            return
        args = records.parse(
            records.LoadArgs, {"name": _name(call.query), "version": _number(call.query, "version", 0)}
        )
        loaded = await self._run(lambda: self.rt.vault.load(signed.who, args))
        if not loaded.get("found"):
            raise NotFound(str(loaded.get("hint") or "not found"))
        await self._page(call, send, pages.session(signed.chrome, loaded))

    async def versions_page(self, call: Call, send: Send) -> None:
        signed = await self._required(call, send, "sessions")
        if signed is None:
            return
        name = _name(call.query)
        line = await self._run(lambda: portability.export_session(self.rt.vault, signed.who, name))
        entries: list[dict[str, Any]] = line["versions"]
        if not entries:
            raise NotFound(f"no session named {name!r}")
        numbers = [int(v["version"]) for v in entries]
        b = _number(call.query, "b", numbers[-1])
        a = _number(call.query, "a", numbers[-2] if len(numbers) > 1 else numbers[-1])
        if a not in numbers or b not in numbers:
            kept = ", ".join(map(str, numbers))
            raise ValidationFailed(f"session {name!r} keeps versions {kept} only")
        by_number = {int(v["version"]): v["record"] for v in entries}
        diffs = diff.compare(by_number[a], by_number[b])
        await self._page(call, send, pages.versions(signed.chrome, name, entries, a, b, diffs))

    async def handoffs_page(self, call: Call, send: Send) -> None:
        signed = await self._required(call, send, "handoffs")
        if signed is None:
            return
        user = signed.who.user_id
        rows = await self._run(lambda: handoffs.offers(self.rt.db, user, "", OFFERS))
        await self._page(call, send, pages.handoffs(signed.chrome, [portability.offer_of(r) for r in rows]))

    async def activity_page(self, call: Call, send: Send) -> None:
        signed = await self._required(call, send, "activity")
        if signed is None:
            return
        user = signed.who.user_id
        rows = await self._run(lambda: store.activity(self.rt.db, user, ACTIVITY_ROWS))
        await self._page(call, send, pages.activity(signed.chrome, rows))

    async def keys_page(self, call: Call, send: Send) -> None:
        signed = await self._required(call, send, "keys")
        if signed is None:
            return
        listed = await self._run(lambda: store.keys(self.rt.db, signed.session.key_hash))
        revoked = call.query.get("revoked", "")
        shown = revoked if revoked.startswith(apikeys.PREFIX) and len(revoked) == apikeys.PREFIX_CHARS else ""
        can = REVOKE_SCOPE in signed.who.scopes
        body = pages.keys(
            signed.chrome, listed, can_revoke=can, have=sorted(signed.who.scopes), revoked=shown
        )
        await self._page(call, send, body)

    async def revoke(self, call: Call, send: Send) -> None:
        step = call.form.get("step", "")
        if step == "confirm":
            call.log.tool = "web/keys.confirm"  # showing the question changes nothing
        signed = await self._required(call, send, "keys")
        if signed is None:
            return
        if (refused := self._csrf_refused(call, signed)) is not None:
            raise refused
        if REVOKE_SCOPE not in signed.who.scopes:
            raise _scope(signed.who.scopes)
        key_id = _uuid(call.form.get("key", ""))
        listed = await self._run(lambda: store.keys(self.rt.db, signed.session.key_hash))
        target = next((k for k in listed if str(k["id"]) == key_id and not k["revoked_at"]), None)
        if target is None:
            raise NotFound("no such active key of yours: it may have been revoked already")
        if step == "confirm":
            await self._page(call, send, pages.confirm_revoke(signed.chrome, target))
            return
        if step != "revoke":
            raise ValidationFailed("invalid form: step must be confirm or revoke")
        outcome = await self._run(lambda: store.revoke(self.rt.db, signed.session.key_hash, key_id))
        if outcome == "scope":
            raise _scope(signed.who.scopes)
        if outcome != "revoked":
            raise NotFound("no such active key of yours: it may have been revoked already")
        if target["current"]:
            text = (
                f"You revoked {target['prefix']}, the key you were signed in with. Sign in with another key."
            )
            await self._signin(call, send, notice=text)
            return
        call.log.status = 303
        await _redirect(send, pages.link(call.root, "/web/keys", revoked=target["prefix"]))

    async def signin(self, call: Call, send: Send) -> None:
        log = call.log
        if not cookie.signin_csrf_ok(
            self.secret, call.jar.get(call.cookies.pre, ""), call.form.get("csrf", "")
        ):
            log.error_class = "validation"
            await self._signin(call, send, status=403, error=EXPIRED_FORM)
            return
        if self.failures is not None and (wait := self.failures.retry_after(log.ip)):
            log.edge_check = "auth_failures"
            text = f"Too many failed sign-ins from this address: try again in {wait} seconds."
            raise refusal(
                429,
                pages.message(None, call.root, "Slow down", text),
                "rate_limit",
                {"Retry-After": str(wait)},
            )
        key = call.form.get("api_key", "").strip()
        who = None
        if apikeys.looks_like_key(key):
            who = await anyio.to_thread.run_sync(self._admit, call, apikeys.digest(key))
        else:
            log.auth_reason = "malformed"
        if who is None:
            log.error_class = "auth"
            await self._signin(call, send, error=BAD_KEY)
            return
        if "read" not in who.scopes:
            log.error_class = "scope"
            await self._signin(call, send, error="That key lacks the read scope the web view needs.")
            return
        value, _ = cookie.seal(self.secret, apikeys.digest(key))
        cookies = [
            call.cookies.set(call.cookies.session, value, cookie.LIFETIME_S),
            call.cookies.clear(call.cookies.pre),
        ]
        log.status = 303
        await _redirect(send, pages.link(call.root, "/"), cookies)

    async def signout(self, call: Call, send: Send) -> None:
        value = call.jar.get(call.cookies.session, "")
        session = cookie.open_session(self.secret, value) if value else None
        if session is not None and not cookie.csrf_ok(self.secret, session, call.form.get("csrf", "")):
            call.log.error_class = "validation"
            raise refusal(403, pages.message(None, call.root, "Refused", EXPIRED_FORM), "validation")
        call.log.status = 303
        await _redirect(send, pages.link(call.root, "/"), [call.cookies.clear(call.cookies.session)])

    # --- helpers -----------------------------------------------------------------------------

    async def _run(self, work: Callable[[], Any]) -> Any:
        return await anyio.to_thread.run_sync(work)

    async def _page(self, call: Call, send: Send, body: bytes) -> None:
        call.log.status = 200
        await _html(send, 200, body)


HANDLERS: dict[str, Handler] = {
    "/": Web.home,
    PREFIX + "/signin": Web.signin,
    PREFIX + "/signout": Web.signout,
    PREFIX + "/session": Web.session_page,
    PREFIX + "/versions": Web.versions_page,
    PREFIX + "/handoffs": Web.handoffs_page,
    PREFIX + "/activity": Web.activity_page,
    PREFIX + "/keys": Web.keys_page,
    PREFIX + "/keys/revoke": Web.revoke,
}


def _scope(have: frozenset[str]) -> VaultError:
    from sessionvault.errors import ScopeMissing

    return ScopeMissing(scope_hint(REVOKE_SCOPE, "revoking a key", have))


def _name(query: dict[str, str]) -> str:
    name = query.get("name", "")
    if not name:
        raise ValidationFailed("invalid arguments: name: give the session's name")
    parsed: records.DeleteArgs = records.parse(records.DeleteArgs, {"name": name})  # every tool's rules
    return parsed.name


def _number(query: dict[str, str], name: str, default: int) -> int:
    raw = query.get(name, "")
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 9):
        raise ValidationFailed(f"invalid arguments: {name}: must be a whole number")
    return int(raw)


def _uuid(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise ValidationFailed("invalid form: key") from None


async def _html(send: Send, status: int, body: bytes, cookies: list[str] | None = None) -> None:
    headers = [(b"content-type", HTML.encode()), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in page_headers().items()]
    headers += [(b"set-cookie", c.encode()) for c in cookies or []]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str, cookies: list[str] | None = None) -> None:
    headers = [(b"location", location.encode()), (b"content-length", b"0")]
    headers += [(k.lower().encode(), v.encode()) for k, v in page_headers().items()]
    headers += [(b"set-cookie", c.encode()) for c in cookies or []]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
