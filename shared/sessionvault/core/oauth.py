"""OAuth 2.1 rules that need no database and no HTTP: token formats, lifetimes, the URLs a base
URL implies, which redirect URIs may be registered, which URLs may be a client's metadata document
(CIMD) and how long one is cached, which scopes a request is for, PKCE S256 and the consent page's
CSRF value.

Tokens are 256 random bits after a prefix that says what they are (`sv_at_` access, `sv_rt_`
refresh); codes and pending-request ids are 256 random bits too. Only SHA-256 hashes of tokens
and codes are stored (`digest`)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from sessionvault.core import apikeys
from sessionvault.settings import is_loopback

ACCESS_PREFIX = "sv_at_"
REFRESH_PREFIX = "sv_rt_"
ACCESS_TTL_S = 3600  # one hour
REFRESH_TTL_S = 30 * 24 * 3600  # rotated on every use; an unused one lapses after 30 days
# An OAuth token's scopes are an API key's, but for the hooks' `checkpoint`: a token is
# model-facing by nature (a client's sign-in), and migration 0005 holds its rows to these three.
SCOPES = ("read", "write", "delete")

# Dynamic registration is open to anyone: these bound what it can store.
MAX_REDIRECT_URIS = 5
MAX_URI_CHARS = 512
MAX_CLIENT_NAME_CHARS = 100
REQUESTS_PER_CLIENT = 50  # live pending authorization requests per client
MAX_STATE_CHARS = 1024  # `state` is stored with the pending request: bounded like the rest
MAX_CLIENT_ID_CHARS = 512  # a registered id is a UUID; a metadata document's URL is bounded

# Client ID Metadata Documents: how long a fetched document is trusted (Cache-Control max-age,
# held within these bounds; the row in oauth_clients is the cache).
DOCUMENT_TTL_MIN_S = 60
DOCUMENT_TTL_DEFAULT_S = 3600
DOCUMENT_TTL_MAX_S = 24 * 3600

MCP_PATH = "/mcp"
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"
AUTHORIZATION_SERVER_PATH = "/.well-known/oauth-authorization-server"
CONSENT_PATH = "/consent"


def _random() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")  # 43 chars


def new_access_token() -> str:
    return ACCESS_PREFIX + _random()


def new_refresh_token() -> str:
    return REFRESH_PREFIX + _random()


def new_code() -> str:
    return _random()


def new_request_id() -> str:
    return _random()


digest = apikeys.digest  # the same SHA-256 as API keys


def looks_like_access_token(value: str) -> bool:
    return value.startswith(ACCESS_PREFIX) and len(value) == len(ACCESS_PREFIX) + 43


def s256(verifier: str) -> str:
    """The PKCE S256 challenge of `verifier` (RFC 7636 section 4.2)."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def resource_url(base: str) -> str:
    """The protected resource: the MCP endpoint under `base` (RFC 8707's `resource`)."""
    return base + MCP_PATH


def resource_metadata_url(base: str) -> str:
    """RFC 9728 section 3.1: the well-known path inserted before the resource's path."""
    parts = urlsplit(resource_url(base))
    return f"{parts.scheme}://{parts.netloc}{PROTECTED_RESOURCE_PATH}{parts.path}"


def base_path(base: str) -> str:
    """The path part of `base` ('' at a domain's root): where relative links must start."""
    return urlsplit(base).path.rstrip("/")


def www_authenticate(base: str) -> str:
    return f'Bearer resource_metadata="{resource_metadata_url(base)}"'


def redirect_uri_problem(uri: str) -> str | None:
    """Why `uri` cannot be registered as a redirect URI, or None: https anywhere, or http only
    on a loopback host; no fragment, no user info; bounded length."""
    if len(uri) > MAX_URI_CHARS:
        return "redirect URI too long"
    try:
        parts = urlsplit(uri)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return "redirect URI is not a URL"
    if parts.fragment or "#" in uri:
        return "redirect URI must not have a fragment"
    if parts.username is not None or parts.password is not None:
        return "redirect URI must not carry user info"
    if not host:
        return "redirect URI has no host"
    if not set(host) <= _HOST_CHARS:  # a name, IPv4 or IPv6: the host also goes into a CSP header
        return "redirect URI host has characters no DNS name or IP address has"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and is_loopback(host):
        return None
    return "redirect URI must be https, or http on a loopback address"


def authorization_problem(state: str | None, code_challenge: str) -> str | None:
    """Why an authorization request's `state` or PKCE challenge cannot be stored, or None. An
    S256 challenge is always 43 base64url characters; anything else could never match a
    verifier, and an unbounded value would let anyone grow the database without signing in."""
    if state is not None and len(state) > MAX_STATE_CHARS:
        return f"state longer than {MAX_STATE_CHARS} characters"
    if len(code_challenge) != 43 or not set(code_challenge) <= _BASE64URL:
        return "code_challenge is not an S256 challenge"
    return None


_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-:")
_BASE64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def is_metadata_document_url(client_id: str) -> bool:
    """A client_id that names its own metadata document (CIMD) rather than a registration."""
    return client_id.startswith("https://")


def metadata_document_url_problem(url: str) -> str | None:
    """Why `url` cannot be a client's metadata document URL (draft-ietf-oauth-client-id-metadata-
    document section 3), or None: https, a host of DNS or IP characters, a path that is not the
    root and has no dot segments, no fragment, no user info, printable ASCII, bounded length."""
    if len(url) > MAX_CLIENT_ID_CHARS:
        return "client_id URL too long"
    if not url.isascii() or any(ch <= " " or ch == "\x7f" for ch in url):
        return "client_id URL has spaces or control characters"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return "client_id is not a URL"
    if parts.scheme != "https":
        return "client_id URL must be https"
    if parts.fragment or "#" in url:
        return "client_id URL must not have a fragment"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "client_id URL must not carry user info"
    if not host or not set(host) <= _HOST_CHARS:
        return "client_id URL host has characters no DNS name or IP address has"
    if parts.path in ("", "/"):
        return "client_id URL must have a path"
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        return "client_id URL must not have dot segments"
    return None


def document_ttl(cache_control: str | None) -> int:
    """Seconds a fetched metadata document is cached: its Cache-Control max-age held within
    [DOCUMENT_TTL_MIN_S, DOCUMENT_TTL_MAX_S]; no-store or no-cache: the minimum; no max-age
    (or a malformed one): the default."""
    directives = {}
    for item in (cache_control or "").lower().split(","):
        name, _, value = item.strip().partition("=")
        directives[name.strip()] = value.strip().strip('"')
    if "no-store" in directives or "no-cache" in directives:
        return DOCUMENT_TTL_MIN_S
    age = directives.get("max-age", "")
    if not age.isdigit():
        return DOCUMENT_TTL_DEFAULT_S
    return max(DOCUMENT_TTL_MIN_S, min(int(age[:12]), DOCUMENT_TTL_MAX_S))


def request_scopes(asked: str | None, registered: str | None) -> tuple[str, ...] | None:
    """The scopes an authorization request is for, canonical, or None when it cannot be for any.
    Asked: known scopes only, narrowed to the client's registered scope when it registered one
    (RFC 6749 section 3.3; MCP clients ask for every scope the server lists), and at least one
    of them left. Nothing asked: the registered scope; nothing registered either: () (the
    approving key's). The approval narrows the result to the key's scopes in any case."""
    allowed = parse_scopes(registered) if registered else SCOPES
    wanted = parse_scopes(asked)
    if allowed is None or wanted is None:  # an unknown scope, asked or (never) stored
        return None
    if not wanted:
        return allowed if registered else ()
    narrowed = tuple(s for s in wanted if s in allowed)
    return narrowed or None


def parse_scopes(scope: str | None) -> tuple[str, ...] | None:
    """A `scope` parameter as canonical scope names; None when one is unknown. Absent or empty:
    () (the approving key's scopes)."""
    asked = set((scope or "").split())
    if not asked <= set(SCOPES):
        return None
    return tuple(s for s in SCOPES if s in asked)


def csrf_token(secret: str, request_id: str) -> str:
    """The consent form's CSRF value: an HMAC of the pending request's id under a key derived
    from the server's secret salt, so any instance can check it and no state is kept."""
    key = hmac.new(secret.encode(), b"sessionvault/consent-csrf", hashlib.sha256).digest()
    mac = hmac.new(key, request_id.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def csrf_ok(secret: str, request_id: str, presented: str) -> bool:
    return hmac.compare_digest(csrf_token(secret, request_id).encode(), presented.encode())
