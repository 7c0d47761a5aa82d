"""Client ID Metadata Documents (CIMD; MCP authorization 2025-11-25,
draft-ietf-oauth-client-id-metadata-document): a client whose client_id is an https URL needs no
registration; the URL names a JSON document with the client's metadata, which this server
fetches, checks and caches (the row in oauth_clients is the cache: `db.oauth.document`).

The fetch is made to a URL anyone chooses, from inside the deployment, so it is held tight:

- https only, to port 443 only (`ports`: a URL naming another port, 22 or 6379 on some host,
  is refused without a connection), checked against the trust `ssl_context` holds (the system's
  by default; tests pass a context that trusts their own CA: verification is never turned off);
- charged before anything is sent, against the caps a registration has, per caller address
  and server-wide, whether the fetch then succeeds or not; a URL whose fetch failed is refused
  from memory for a minute (`fetch_budget.FetchBudget`, which the OAuth server gives its fetcher);
- the host's DNS answers are checked before connecting (`public_address`: no loopback,
  private, link-local, multicast, reserved or cloud metadata address, including IPv4 hidden
  in an IPv6 one), any refused answer refuses the fetch, and the connection is made to the
  checked address (the name only for SNI and the certificate), so a second resolution cannot
  send it elsewhere;
- redirects are not followed, anything but a 200 is refused;
- at most `max_bytes` (64 KB) of body and `timeout_s` (5 s) for all of it, DNS included;
- the document must be a JSON object whose `client_id` equals the URL exactly, and only the
  fields this server uses are kept (`document_client`).

`allow`, `resolve` and `ports` are parameters so that tests can serve documents from
127.0.0.1 on a port of their own (the defaults refuse both)."""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import h11
from pydantic import AnyUrl, ValidationError

from sessionvault.core import oauth
from sessionvault.errors import DocumentError
from sessionvault.server.oauth.fetch_budget import FetchBudget

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressPolicy = Callable[[IPAddress], bool]
Resolver = Callable[[str, int], Awaitable[list[str]]]

MAX_BYTES = 64 * 1024
TIMEOUT_S = 5.0
# Cloud instance metadata endpoints (AWS IMDS over IPv4 and IPv6, ECS task metadata, Alibaba,
# Oracle): refused by name, though the address rules below refuse each of them already.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200", "192.0.0.192")
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
GRANT_TYPES = ("authorization_code", "refresh_token")


def _embedded(ip: IPAddress) -> list[IPAddress]:
    """`ip` and any IPv4 address it carries (mapped, 6to4, Teredo, NAT64): each must pass."""
    found: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            found.append(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            found.append(ip.sixtofour)
        if ip.teredo is not None:
            found.extend(ip.teredo)
        if ip in _NAT64:
            found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def public_address(ip: IPAddress) -> bool:
    """The default policy: a globally routable unicast address, and not a metadata endpoint."""
    return all(
        a.is_global
        and not (a.is_loopback or a.is_private or a.is_link_local or a.is_multicast)
        and not (a.is_reserved or a.is_unspecified)
        and a not in METADATA_ADDRESSES
        for a in _embedded(ip)
    )


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class Document:
    info: dict[str, Any]  # the client as stored: only the fields this server uses
    ttl_s: int  # how long it may be cached (Cache-Control max-age, within bounds)


@dataclass
class Fetcher:
    """Fetches and checks metadata documents. The defaults are production's."""

    ssl_context: ssl.SSLContext | None = None  # None: the system's trust, made at the first fetch
    allow: AddressPolicy = public_address
    resolve: Resolver = system_resolver
    timeout_s: float = TIMEOUT_S
    max_bytes: int = MAX_BYTES
    ports: frozenset[int] = frozenset({443})
    budget: FetchBudget | None = None  # None: uncharged (a fetcher on its own, in a test)

    async def fetch(self, url: str, address: bytes | None = None) -> Document:
        """The document at `url`, fetched for the caller at `address` (its salted hash), or
        DocumentError; nothing is sent before the URL, its port and the budget pass."""
        problem = oauth.metadata_document_url_problem(url)
        if problem:
            raise DocumentError("url", problem)
        if (urlsplit(url).port or 443) not in self.ports:
            raise DocumentError("port", "only port 443 is fetched")
        if self.budget is None:
            return await self._fetch(url)
        self.budget.charge(url, address)
        try:
            return await self._fetch(url)
        except DocumentError as exc:
            self.budget.failed(url, exc.code)
            raise

    async def _fetch(self, url: str) -> Document:
        try:
            with anyio.fail_after(self.timeout_s):
                headers, body = await self._get(url)
        except TimeoutError:
            raise DocumentError("timeout", f"no complete answer within {self.timeout_s} s") from None
        except (OSError, ssl.SSLError, anyio.BrokenResourceError, h11.ProtocolError) as exc:
            raise DocumentError("connect", type(exc).__name__) from None
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise DocumentError("json", "not JSON") from None
        return Document(document_client(url, document), oauth.document_ttl(headers.get("cache-control")))

    async def _addresses(self, host: str, port: int) -> list[str]:
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            answers = await self.resolve(host, port)
        else:
            answers = [str(literal)]
        if not answers:
            raise DocumentError("dns", "no address")
        for answer in answers:
            try:
                ip = ipaddress.ip_address(answer.split("%", 1)[0])
            except ValueError:
                raise DocumentError("dns", "not an address") from None
            if not self.allow(ip):
                raise DocumentError("address", "resolves to an address that is not public")
        return answers

    async def _get(self, url: str) -> tuple[dict[str, str], bytes]:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or 443
        if self.ssl_context is None:  # not at start: a cold start should not load the trust store
            self.ssl_context = ssl.create_default_context()
        failure: OSError = ConnectionError("no address")
        for address in await self._addresses(host, port):  # each one checked; the first that answers
            try:
                stream = await anyio.connect_tcp(
                    address,  # the checked address itself: no second resolution
                    port,
                    tls=True,
                    ssl_context=self.ssl_context,
                    tls_hostname=host,  # SNI and the certificate's name
                    tls_standard_compatible=False,
                )
            except OSError as exc:
                failure = exc
                continue
            async with stream:
                target = parts.path + (f"?{parts.query}" if parts.query else "")
                return await self._exchange(stream, parts.netloc, target)
        raise failure

    async def _exchange(
        self, stream: anyio.abc.ByteStream, authority: str, target: str
    ) -> tuple[dict[str, str], bytes]:
        conn = h11.Connection(h11.CLIENT)
        request = h11.Request(
            method="GET",
            target=target,
            headers=[
                ("Host", authority),
                ("Accept", "application/json"),
                ("User-Agent", "SessionVault (client metadata document fetcher)"),
                ("Connection", "close"),
            ],
        )
        await stream.send((conn.send(request) or b"") + (conn.send(h11.EndOfMessage()) or b""))
        headers: dict[str, str] = {}
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    chunk = await stream.receive(16384)
                except anyio.EndOfStream:
                    chunk = b""
                conn.receive_data(chunk)
            elif isinstance(event, h11.Response):
                if 300 <= event.status_code < 400:
                    raise DocumentError("redirect", "redirects are not followed")
                if event.status_code != 200:
                    raise DocumentError("status", f"answered {event.status_code}")
                headers = {k.decode().lower(): v.decode("latin-1") for k, v in event.headers}
                length = headers.get("content-length", "")
                if length.isdigit() and int(length) > self.max_bytes:
                    raise DocumentError("size", f"larger than {self.max_bytes} bytes")
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > self.max_bytes:
                    raise DocumentError("size", f"larger than {self.max_bytes} bytes")
            elif isinstance(event, h11.EndOfMessage):
                return headers, bytes(body)
            elif isinstance(event, h11.ConnectionClosed):
                raise DocumentError("connect", "closed before the answer was complete")
            # h11.InformationalResponse (1xx): wait for the real answer


def document_client(url: str, document: Any) -> dict[str, Any]:
    """The client a metadata document describes, as stored: only the fields this server uses,
    each checked like a registration's; raises DocumentError."""
    if not isinstance(document, dict):
        raise DocumentError("shape", "not a JSON object")
    if document.get("client_id") != url:
        raise DocumentError("client_id", "its client_id is not exactly its URL")
    if "client_secret" in document or "client_secret_expires_at" in document:
        raise DocumentError("secret", "a metadata document cannot carry a client secret")
    if document.get("token_endpoint_auth_method", "none") != "none":
        raise DocumentError("auth_method", "only token_endpoint_auth_method none is supported")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not 1 <= len(uris) <= oauth.MAX_REDIRECT_URIS:
        raise DocumentError("redirect_uris", f"1 to {oauth.MAX_REDIRECT_URIS} redirect_uris")
    for uri in uris:
        if not isinstance(uri, str) or oauth.redirect_uri_problem(uri) or not _canonical(uri):
            raise DocumentError("redirect_uris", "a redirect URI that cannot be used exactly")
    info: dict[str, Any] = {
        "client_id": url,
        "redirect_uris": list(dict.fromkeys(uris)),
        "token_endpoint_auth_method": "none",
        "response_types": ["code"],
    }
    grants = document.get("grant_types", list(GRANT_TYPES))
    if not isinstance(grants, list) or "authorization_code" not in grants:
        raise DocumentError("grant_types", "grant_types must include authorization_code")
    info["grant_types"] = [g for g in GRANT_TYPES if g in grants]
    responses = document.get("response_types", ["code"])
    if not isinstance(responses, list) or "code" not in responses:
        raise DocumentError("response_types", "response_types must include code")
    name = document.get("client_name")
    if name is not None:
        if not isinstance(name, str) or len(name) > oauth.MAX_CLIENT_NAME_CHARS:
            raise DocumentError(
                "client_name", f"client_name of at most {oauth.MAX_CLIENT_NAME_CHARS} characters"
            )
        info["client_name"] = name
    scope = document.get("scope")
    if scope is not None:
        if not isinstance(scope, str) or oauth.parse_scopes(scope) is None:
            raise DocumentError("scope", "unknown scope")
        info["scope"] = scope
    return info


def _canonical(uri: str) -> bool:
    """The URI is already in the form the redirect URI check compares: used exactly as written."""
    try:
        return str(AnyUrl(uri)) == uri
    except ValidationError:
        return False
