"""The OAuth 2.1 authorization server in front of /mcp, built on the MCP SDK's handlers
(`mcp.server.auth`: authorize, token, register, revoke, RFC 8414 metadata) with a provider whose
state lives in Postgres (`db.oauth`). Served by the same app, unauthenticated:

    GET  /.well-known/oauth-protected-resource[/mcp]   RFC 9728 (both forms)
    GET  /.well-known/oauth-authorization-server       RFC 8414
    GET  /authorize  -> 302 to /consent?request=<id>    (server/consent.py)
    POST /token      authorization_code (PKCE S256 only) | refresh_token (rotating)
    POST /register   RFC 7591 dynamic registration (capped)
    POST /revoke     RFC 7009

The issuer is `Settings.public_url` or, when unset, the request's own Host (checked against
`allowed_hosts` locally; behind API Gateway it is the API's domain); the resource is
`<issuer>/mcp`. No CORS: like /mcp, these endpoints serve native clients and server-side
connectors (claude.ai, ChatGPT), not pages of other sites."""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

import anyio.to_thread
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import (
    InvalidRedirectUriError,
    OAuthClientInformationFull,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyHttpUrl, AnyUrl, BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from sessionvault.core import oauth
from sessionvault.db import oauth as store
from sessionvault.db.audit import salted_hash
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server import guard
from sessionvault.settings import Settings
from sessionvault.telemetry import RequestLog

MAX_FORM_BYTES = 64 * 1024
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")


class _Url(BaseModel):
    # No trailing slash added to a bare origin: the issuer is compared as a string (RFC 8414).
    model_config = ConfigDict(url_preserve_empty_path=True)
    url: AnyHttpUrl


def base_url(settings: Settings, headers: Mapping[str, str]) -> str:
    """This server's public URL: the setting, else the request's (already checked) Host."""
    if settings.public_url:
        return settings.public_url
    scheme = "http" if guard.is_local(settings) else "https"
    return f"{scheme}://{headers.get('host', '').strip().lower()}"


class RegisteredClient(OAuthClientInformationFull):
    """A stored client. Redirect URIs match by string equality with what was registered (both
    sides in the URL parser's canonical form), never by prefix or pattern."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None:  # OAuth 2.1 clients send it; requiring it keeps /token exact
            raise InvalidRedirectUriError("redirect_uri is required")
        if str(redirect_uri) not in {str(uri) for uri in self.redirect_uris or ()}:
            raise InvalidRedirectUriError("redirect_uri is not registered for this client")
        return redirect_uri


@dataclass
class Provider:
    """`OAuthAuthorizationServerProvider` over Postgres, built per request: it knows the base
    URL and, at /token, the form (the PKCE verifier and redirect URI are checked again in SQL,
    and the SDK does not pass them on)."""

    rt: Runtime
    base: str
    address: bytes | None = None  # the caller's address, salted and hashed as in the audit trail
    form: Mapping[str, str] = field(default_factory=dict)
    stored: dict[str, store.Client] = field(default_factory=dict)

    @property
    def resource(self) -> str:
        return oauth.resource_url(self.base)

    async def _db(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, self.rt.db, *args)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        found = await self._db(store.client, client_id[:200])
        if found is None:
            return None
        self.stored[client_id] = found
        try:
            return RegisteredClient.model_validate({**found.info, "client_id": found.client_id})
        except ValidationError:
            return None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        _check_registration(client_info)
        secret = client_info.client_secret
        info = client_info.model_dump(mode="json", exclude={"client_secret"}, exclude_none=True)
        row = store.Client(client_info.client_id, oauth.digest(secret) if secret else None, info)
        settings = self.rt.settings
        caps = (settings.oauth_registrations_per_hour, settings.oauth_registrations_per_address)
        outcome = await self._db(store.register, row, caps, self.address)
        if outcome != "ok":
            raise RegistrationError("invalid_client_metadata", "too many registrations this hour; try later")

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource not in (None, self.resource):
            raise AuthorizeError("invalid_target", "this server's resource is " + self.resource)
        problem = oauth.authorization_problem(params.state, params.code_challenge)
        if problem:
            raise AuthorizeError("invalid_request", problem)
        scopes = oauth.parse_scopes(" ".join(params.scopes or ()))
        if scopes is None:
            raise AuthorizeError("invalid_scope", "unknown scope")
        request = store.Pending(
            oauth.new_request_id(),
            client.client_id or "",
            str(params.redirect_uri),
            params.state,
            params.code_challenge,
            scopes,
            self.resource,
        )
        if not await self._db(store.begin, request, oauth.REQUESTS_PER_CLIENT):
            raise AuthorizeError("temporarily_unavailable", "too many pending requests; try later")
        return f"{self.base}{oauth.CONSENT_PATH}?request={request.id}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        found: store.Code | None = await self._db(store.code, oauth.digest(authorization_code))
        if found is None:
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=list(found.scopes),
            expires_at=found.expires_at.timestamp(),
            client_id=found.client_id,
            code_challenge=found.code_challenge,
            redirect_uri=AnyUrl(found.redirect_uri),
            redirect_uri_provided_explicitly=True,
            resource=found.resource,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        access, refresh = oauth.new_access_token(), oauth.new_refresh_token()
        minted: store.Minted = await anyio.to_thread.run_sync(
            lambda: store.exchange(
                self.rt.db,
                oauth.digest(authorization_code.code),
                client_id=client.client_id or "",
                redirect_uri=_canonical(self.form.get("redirect_uri", "")),
                verifier=self.form.get("code_verifier", ""),
                resource=self.resource,
                access_hash=oauth.digest(access),
                refresh_hash=oauth.digest(refresh),
                access_ttl_s=oauth.ACCESS_TTL_S,
                refresh_ttl_s=oauth.REFRESH_TTL_S,
            )
        )
        return _tokens(minted, access, refresh)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found: store.Token | None = await self._db(store.token, oauth.digest(refresh_token))
        if found is None or found.kind != "refresh":
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=found.client_id,
            scopes=list(found.scopes),
            expires_at=int(found.expires_at.timestamp()),
            resource=found.resource,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        access, refresh = oauth.new_access_token(), oauth.new_refresh_token()
        minted: store.Minted = await anyio.to_thread.run_sync(
            lambda: store.refresh(
                self.rt.db,
                oauth.digest(refresh_token.token),
                client_id=client.client_id or "",
                scopes=tuple(scopes),
                resource=self.resource,
                access_hash=oauth.digest(access),
                refresh_hash=oauth.digest(refresh),
                access_ttl_s=oauth.ACCESS_TTL_S,
                refresh_ttl_s=oauth.REFRESH_TTL_S,
            )
        )
        return _tokens(minted, access, refresh)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found: store.Token | None = await self._db(store.token, oauth.digest(token))
        if found is None or found.kind != "access":
            return None
        return AccessToken(
            token=token,
            client_id=found.client_id,
            scopes=list(found.scopes),
            expires_at=int(found.expires_at.timestamp()),
            resource=found.resource,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await self._db(store.revoke, oauth.digest(token.token), token.client_id)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: Any
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "not supported")


def _canonical(uri: str) -> str:
    try:
        return str(AnyUrl(uri)) if uri else ""
    except ValidationError:
        return ""


def _tokens(minted: store.Minted, access: str, refresh: str) -> OAuthToken:
    if not minted.ok:
        raise TokenError("invalid_grant", "the grant is invalid, expired or revoked")
    return OAuthToken(
        access_token=access,
        expires_in=oauth.ACCESS_TTL_S,
        scope=" ".join(minted.scopes),
        refresh_token=refresh,
    )


def _check_registration(info: OAuthClientInformationFull) -> None:
    """What open registration may store: few, well-formed redirect URIs and a short name."""
    uris = [str(uri) for uri in info.redirect_uris or ()]
    if not uris or len(uris) > oauth.MAX_REDIRECT_URIS:
        raise RegistrationError(
            "invalid_redirect_uri", f"register 1 to {oauth.MAX_REDIRECT_URIS} redirect URIs"
        )
    for uri in uris:
        problem = oauth.redirect_uri_problem(uri)
        if problem:
            raise RegistrationError("invalid_redirect_uri", problem)
    if info.token_endpoint_auth_method not in AUTH_METHODS:
        raise RegistrationError("invalid_client_metadata", "token_endpoint_auth_method not supported")
    if len(info.client_name or "") > oauth.MAX_CLIENT_NAME_CHARS:
        raise RegistrationError("invalid_client_metadata", "client_name too long")
    if len(info.model_dump_json()) > 8192:
        raise RegistrationError("invalid_client_metadata", "client metadata too large")


class HashedSecretAuthenticator(ClientAuthenticator):
    """The SDK's client authentication, against the stored SHA-256 of the client secret (the
    secret itself is shown once, at registration, and never stored)."""

    def __init__(self, provider: Provider) -> None:
        super().__init__(provider)
        self.store = provider

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        client_id = form.get("client_id")
        client = await self.store.get_client(client_id) if isinstance(client_id, str) and client_id else None
        stored = self.store.stored.get(client_id) if isinstance(client_id, str) else None
        if client is None or stored is None:
            raise AuthenticationError("invalid client")
        method = client.token_endpoint_auth_method
        if method == "client_secret_basic":
            secret = _basic_secret(request.headers.get("authorization", ""), client_id)  # type: ignore[arg-type]
        elif method == "client_secret_post":
            raw = form.get("client_secret")
            secret = raw if isinstance(raw, str) else None
        else:
            secret = None
        if stored.secret_hash is None:
            if method != "none":
                raise AuthenticationError("invalid client")
            return client
        if not secret or not hmac.compare_digest(oauth.digest(secret), stored.secret_hash):
            raise AuthenticationError("invalid client")
        return client


def _basic_secret(header: str, client_id: str) -> str | None:
    if not header.startswith("Basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:], validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, secret = decoded.partition(":")
    return unquote(secret) if sep and unquote(user) == client_id else None


@lru_cache(maxsize=32)
def _documents(base: str) -> tuple[bytes, bytes]:
    """(authorization-server metadata, protected-resource metadata) for `base`, as JSON."""
    issuer = _Url(url=base).url  # type: ignore[arg-type]
    metadata = build_metadata(
        issuer,
        None,
        ClientRegistrationOptions(
            enabled=True, valid_scopes=list(oauth.SCOPES), default_scopes=list(oauth.SCOPES)
        ),
        RevocationOptions(enabled=True),
    )
    metadata.token_endpoint_auth_methods_supported = list(AUTH_METHODS)
    resource = ProtectedResourceMetadata(
        resource=_Url(url=oauth.resource_url(base)).url,  # type: ignore[arg-type]
        authorization_servers=[issuer],
        scopes_supported=list(oauth.SCOPES),
        resource_name="SessionVault",
    )
    dump = {"exclude_none": True, "by_alias": True}
    return metadata.model_dump_json(**dump).encode(), resource.model_dump_json(**dump).encode()  # type: ignore[arg-type]


def well_known_paths(base: str) -> dict[str, int]:
    """Path -> which document (0: authorization server, 1: protected resource), in the root
    form and RFC 8414 / RFC 9728's path-inserted forms."""
    prefix = oauth.base_path(base)
    return {
        oauth.AUTHORIZATION_SERVER_PATH: 0,
        oauth.AUTHORIZATION_SERVER_PATH + prefix: 0,
        oauth.PROTECTED_RESOURCE_PATH: 1,
        oauth.PROTECTED_RESOURCE_PATH + prefix + oauth.MCP_PATH: 1,
    }


Handler = Callable[[Request, Provider], Awaitable[Response]]


async def _authorize(request: Request, provider: Provider) -> Response:
    return await AuthorizationHandler(provider).handle(request)


async def _token(request: Request, provider: Provider) -> Response:
    form = await request.form()  # parsed once: Starlette keeps it for the SDK's handler
    resource = form.get("resource")
    if resource is not None and resource != provider.resource:  # RFC 8707: not ours
        return JSONResponse({"error": "invalid_target"}, status_code=400, headers=NO_STORE)
    provider.form = {k: v for k, v in form.items() if isinstance(v, str)}
    handler = TokenHandler(provider, HashedSecretAuthenticator(provider))
    response: Response = await handler.handle(request)
    return response


async def _register(request: Request, provider: Provider) -> Response:
    options = ClientRegistrationOptions(
        enabled=True, valid_scopes=list(oauth.SCOPES), default_scopes=list(oauth.SCOPES)
    )
    return await RegistrationHandler(provider, options).handle(request)


async def _revoke(request: Request, provider: Provider) -> Response:
    return await RevocationHandler(provider, HashedSecretAuthenticator(provider)).handle(request)


ENDPOINTS: dict[str, tuple[tuple[str, ...], str, Handler]] = {
    "/authorize": (("GET", "POST"), "oauth/authorize", _authorize),
    "/token": (("POST",), "oauth/token", _token),
    "/register": (("POST",), "oauth/register", _register),
    "/revoke": (("POST",), "oauth/revoke", _revoke),
}


async def read_body(receive: Receive, limit: int = MAX_FORM_BYTES) -> bytes:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > limit:
            raise Refused(413, b'{"error": "request body too large"}', "validation")
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replaying(body: bytes) -> Receive:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


class OAuthServer:
    """Dispatches the OAuth paths; `app.py` has already checked the Host."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def serves(self, path: str, base: str) -> bool:
        return path in ENDPOINTS or path in well_known_paths(base)

    async def handle(self, scope: Scope, receive: Receive, send: Send, base: str, log: RequestLog) -> None:
        path, method = scope["path"].rstrip("/") or "/", scope["method"]
        documents = well_known_paths(base)
        if path in documents:
            log.tool = "oauth/metadata"
            if method != "GET":
                raise Refused(405, b'{"error": "method not allowed"}', "validation", {"Allow": "GET"})
            body = _documents(base)[documents[path]]
            response: Response = Response(
                body, media_type="application/json", headers={"Cache-Control": "max-age=3600"}
            )
        else:
            methods, log.tool, handler = ENDPOINTS[path]
            if method not in methods:
                raise Refused(
                    405, b'{"error": "method not allowed"}', "validation", {"Allow": ", ".join(methods)}
                )
            body = await read_body(receive)
            request = Request(scope, replaying(body))
            address = salted_hash(log.ip, self.rt.settings.audit_salt)
            response = await handler(request, Provider(self.rt, base, address))
        log.status = response.status_code
        if response.status_code >= 400:
            log.error_class = "auth" if response.status_code == 401 else "validation"
        await response(scope, replaying(b""), send)
