"""What stops a request to /mcp before its body is read and before any database work: the
Host, Origin and Content-Type headers, and (local mode) a client address that keeps failing
to authenticate.

Host: `Settings.allowed_hosts`, with the MCP SDK's meaning: exact names, `name:*` for any
port (here: any *numeric* port), `*` for any host. Anything else is a 421, as the SDK answers.

Origin (sent by browsers, never by the MCP clients, which are native programs): absent is
fine; present, it must be allowed or the request is a 403.
- Local mode (allowed_hosts without `*`: a server on a loopback address): only loopback
  origins, `http://127.0.0.1:*`, `http://localhost:*` and `http://[::1]:*`. A page of any
  other site, or one reaching 127.0.0.1 through a rebound DNS name, never gets further.
- Behind API Gateway (allowed_hosts `*`): no Origin at all. SessionVault serves no web pages
  and answers no CORS preflight (OPTIONS is not routed), so a browser could not complete a call
  anyway; refusing early keeps a foreign page from spending a user's rate budget or an admission
  round trip. Supporting a browser client would mean adding an `allowed_origins` setting
  (SESSIONVAULT_ALLOWED_ORIGINS) together with CORS answers: `HeaderPolicy(origins=...)` takes it.

Content-Type must be `application/json` (parameters such as `charset` allowed), else 415.
That alone stops the one POST a web page can send without a preflight (text/plain).

The OAuth endpoints a client posts to get the same two checks (`HeaderPolicy.check_post`), after
the Host check they share with every path: an Origin must be allowed (every one, if several
were sent), and there must be exactly one Content-Type, of the endpoint's media type
(`POSTED`): JSON for /register (RFC 7591), a urlencoded form for /token (RFC 6749) and /revoke
(RFC 7009). Without them a page of any site could register clients on a local server with a
text/plain POST, until the registration cap ran out. /authorize is reached by a browser sent
there by another site, and the consent page is a browser form with same-origin and CSRF checks
of its own (`server/oauth/consent.py`): neither is checked here.

Failed authentications (local mode): `AuthFailureLimit` counts them per client address over a
sliding minute in memory, bounded in the number of addresses it remembers. Once an address is
over `Settings.auth_failures_per_minute`, its requests are 429s before the database is asked,
except those carrying a key this process admitted recently: every local client shares
127.0.0.1, and one client looping on a stale key must not lock out the others. Inside Lambda
(many short-lived instances behind API Gateway's own throttling) a per-process count would
mean little, and the database counts failures per minute (`auth_failures`) instead of storing
them."""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from starlette.datastructures import Headers

from sessionvault.core import apikeys
from sessionvault.errors import Refused
from sessionvault.server.admission.admitter import bearer_token
from sessionvault.server.edge import FORM, JSON, is_json, media_type
from sessionvault.settings import Settings

Check = Literal["host", "origin", "content_type"]

ANY = "*"
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")


def is_local(settings: Settings) -> bool:
    """Serving on this machine (named hosts only), not behind a gateway (`*`)."""
    return ANY not in settings.allowed_hosts


def base_url(settings: Settings, headers: Mapping[str, str]) -> str:
    """This server's public URL: the setting, else the request's (already checked) Host. Here,
    beside the Host check, for every room that names the server (OAuth documents, a 401's
    resource metadata, the riding admission's refusal)."""
    if settings.public_url:
        return settings.public_url
    scheme = "http" if is_local(settings) else "https"
    return f"{scheme}://{headers.get('host', '').strip().lower()}"


# A DNS name or IPv4 address, or a bracketed IPv6 address, and an optional port: the issuer
# and resource URLs are built from the Host, so "*" admits any host of this shape, not any text.
_HOST = re.compile(r"(?:[a-z0-9_](?:[a-z0-9_.-]{0,251}[a-z0-9_])?|\[[0-9a-f:.]{2,45}\])(?::[0-9]{1,5})?")


def host_allowed(host: str, patterns: Iterable[str]) -> bool:
    """A well-formed Host that `patterns` admit."""
    return _HOST.fullmatch(host.strip().lower()) is not None and matches(host, patterns)


def matches(value: str, patterns: Iterable[str]) -> bool:
    """`value` (case-insensitive) is one of `patterns`: exact, `base:*` (base, a colon and a
    numeric port) or `*` (anything)."""
    value = value.strip().lower()
    for pattern in patterns:
        pattern = pattern.strip().lower()
        if pattern == ANY or (value and pattern == value):
            return True
        if pattern.endswith(":*"):
            base, _, port = value.rpartition(":")
            if base == pattern[:-2] and port.isascii() and port.isdigit():
                return True
    return False


# The OAuth endpoints a client posts to, and the one media type each takes.
POSTED = {"/register": JSON, "/token": FORM, "/revoke": FORM}


@dataclass(frozen=True)
class HeaderPolicy:
    hosts: tuple[str, ...]  # () refuses every Host; ("*",) admits any
    origins: tuple[str, ...] = ()  # allowed Origin values: () refuses every request that has one

    @classmethod
    def from_settings(cls, settings: Settings) -> HeaderPolicy:
        origins = LOOPBACK_ORIGINS if is_local(settings) else ()
        return cls(tuple(settings.allowed_hosts), origins)

    def check(self, headers: Headers) -> Check | None:
        """The first check the request's headers fail, else None: one Host, every Origin
        allowed, one Content-Type. A second Host or Content-Type must not slip past, since the
        MCP SDK's own check (`exchange.py`) reads the first of each; the request would be
        admitted, then refused there. (The edge has checked the Host already; /mcp checks it
        again here, in the SDK's order.)"""
        hosts = headers.getlist("host")
        if len(hosts) != 1 or not host_allowed(hosts[0], self.hosts):
            return "host"
        if self.check_origins(headers) is not None:
            return "origin"
        content_types = headers.getlist("content-type")
        if len(content_types) != 1 or not is_json(content_types[0]):
            return "content_type"
        return None

    def check_origins(self, headers: Headers) -> Check | None:
        """ "origin" unless every Origin sent (any number of them) is allowed, else None."""
        if any(origin and not matches(origin, self.origins) for origin in headers.getlist("origin")):
            return "origin"
        return None

    def check_post(self, headers: Headers, expected: str) -> Check | None:
        """The first check a POST to an OAuth endpoint or the API fails (its Host already
        checked), else None: every Origin sent must be allowed, and the one Content-Type must be
        `expected` (a second one must not slip past: Starlette, which parses the body later,
        reads the first)."""
        if self.check_origins(headers) is not None:
            return "origin"
        content_types = headers.getlist("content-type")
        if len(content_types) != 1 or media_type(content_types[0]) != expected:
            return "content_type"
        return None


def _body(message: str, **extra: object) -> bytes:
    return json.dumps({"error": message, **extra}).encode()


def refusal(check: Check, expected: str = JSON) -> Refused:
    """The answer to a request that failed `check` (a new exception each time: a raised
    instance keeps its traceback, and re-raising one lengthens it); `expected`, the media type
    a 415 asks for."""
    if check == "host":
        return Refused(421, _body("invalid Host header"), "auth", edge_check=check)
    if check == "origin":
        return Refused(403, _body("invalid Origin header"), "auth", edge_check=check)
    body = _body(f"Content-Type must be {expected}")
    return Refused(415, body, "validation", {"Accept": expected}, edge_check=check)


def too_many_failures(retry_after_s: int) -> Refused:
    body = _body("too many failed authentications from this address", retry_after=retry_after_s)
    return Refused(429, body, "rate_limit", {"Retry-After": str(retry_after_s)}, edge_check="auth_failures")


def key_digest(authorization: str | None) -> bytes | None:
    """The SHA-256 of the bearer key in an Authorization header, if it carries one."""
    token = bearer_token(authorization)
    return apikeys.digest(token) if token else None


class AuthFailureLimit:
    """At most `per_window` failed authentications per client address in any `window_s`
    seconds. Remembers at most `max_clients` addresses (the least recently failing is
    forgotten first) and `max_keys` recently admitted keys (by digest, for `key_ttl_s`)."""

    def __init__(
        self,
        per_window: int,
        *,
        window_s: float = 60.0,
        max_clients: int = 4096,
        max_keys: int = 256,
        key_ttl_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_window < 1:
            raise ValueError("per_window must be at least 1")
        self.per_window, self.window_s, self.clock = per_window, window_s, clock
        self.max_clients, self.max_keys, self.key_ttl_s = max_clients, max_keys, key_ttl_s
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._keys: OrderedDict[bytes, float] = OrderedDict()  # digest -> admitted at
        self._lock = threading.Lock()

    def retry_after(self, client: str) -> int:
        """Seconds until `client` may try again; 0 when it is not over the limit."""
        now = self.clock()
        with self._lock:
            times = self._failures.get(client)
            if times is None:
                return 0
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if not times:
                del self._failures[client]
                return 0
            if len(times) < self.per_window:
                return 0
            return max(1, math.ceil(times[0] + self.window_s - now))

    def failed(self, client: str) -> None:
        now = self.clock()
        with self._lock:
            times = self._failures.pop(client, None)
            if times is None:
                times = deque(maxlen=self.per_window)  # only the newest few decide anything
            times.append(now)
            self._failures[client] = times  # most recently failing last
            while len(self._failures) > self.max_clients:
                self._failures.popitem(last=False)

    def admitted(self, key: bytes | None) -> None:
        if key is None:
            return
        with self._lock:
            self._keys.pop(key, None)
            self._keys[key] = self.clock()
            while len(self._keys) > self.max_keys:
                self._keys.popitem(last=False)

    def known(self, key: bytes | None) -> bool:
        """`key` was admitted by this process within `key_ttl_s`."""
        if key is None:
            return False
        with self._lock:
            at = self._keys.get(key)
            if at is None:
                return False
            if at <= self.clock() - self.key_ttl_s:
                del self._keys[key]
                return False
            return True

    def __len__(self) -> int:
        """How many client addresses are remembered."""
        return len(self._failures)
