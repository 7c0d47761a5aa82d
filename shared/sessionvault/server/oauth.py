"""The OAuth 2.1 authorization server in front of /mcp, built on the MCP SDK's handlers
(`mcp.server.auth`: authorize, token, register, revoke, RFC 8414 metadata) with a provider whose
state lives in Postgres (`server/oauth_provider.py`, `db.oauth`). Served by the same app, unauthenticated:

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

from collections.abc import Awaitable, Callable, Mapping
from functools import lru_cache

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl, BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from sessionvault.core import oauth
from sessionvault.db.audit import salted_hash
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server import guard
from sessionvault.server.edge import read_body, replaying
from sessionvault.server.oauth_provider import AUTH_METHODS, HashedSecretAuthenticator, Provider
from sessionvault.settings import Settings
from sessionvault.telemetry import RequestLog

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
REGISTRATION = ClientRegistrationOptions(
    enabled=True, valid_scopes=list(oauth.SCOPES), default_scopes=list(oauth.SCOPES)
)


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


@lru_cache(maxsize=32)
def _documents(base: str) -> tuple[bytes, bytes]:
    """(authorization-server metadata, protected-resource metadata) for `base`, as JSON."""
    issuer = _Url(url=base).url  # type: ignore[arg-type]
    metadata = build_metadata(
        issuer,
        None,
        REGISTRATION,
        RevocationOptions(enabled=True),
    )
    metadata.token_endpoint_auth_methods_supported = list(AUTH_METHODS)
    # RFC 9207: every redirect from the consent page names the issuer (Gemini CLI requires it).
    metadata.authorization_response_iss_parameter_supported = True
    resource = ProtectedResourceMetadata(
        resource=_Url(url=oauth.resource_url(base)).url,  # type: ignore[arg-type]
        authorization_servers=[issuer],
        scopes_supported=list(oauth.SCOPES),
        resource_name="SessionVault",
    )
    dump = {"exclude_none": True, "by_alias": True}
    return metadata.model_dump_json(**dump).encode(), resource.model_dump_json(**dump).encode()  # type: ignore[arg-type]


@lru_cache(maxsize=32)
def well_known_paths(base: str) -> dict[str, int]:
    """Path -> which document (0: authorization server, 1: protected resource), in the root
    form and RFC 8414 / RFC 9728's path-inserted forms. Cached: asked twice per request; read only."""
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
    return await RegistrationHandler(provider, REGISTRATION).handle(request)


async def _revoke(request: Request, provider: Provider) -> Response:
    return await RevocationHandler(provider, HashedSecretAuthenticator(provider)).handle(request)


ENDPOINTS: dict[str, tuple[tuple[str, ...], str, Handler]] = {
    "/authorize": (("GET", "POST"), "oauth/authorize", _authorize),
    "/token": (("POST",), "oauth/token", _token),
    "/register": (("POST",), "oauth/register", _register),
    "/revoke": (("POST",), "oauth/revoke", _revoke),
}


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
