"""The OAuth 2.1 authorization server in front of /mcp, built on the MCP SDK's handlers
(`mcp.server.auth`: authorize, token, register, revoke, RFC 8414 metadata) with a provider whose
state lives in Postgres (`server/oauth/provider.py`, `db.oauth`). Served by the same app, unauthenticated:

    GET  /.well-known/oauth-protected-resource[/mcp]   RFC 9728 (both forms)
    GET  /.well-known/oauth-authorization-server       RFC 8414
    GET  /authorize  -> 302 to /consent?request=<id>    (server/oauth/consent.py)
                     an error: 400, our own HTML page, unless a user has approved the client
                     (then 302 to its redirect URI with error, state and iss): never an open
                     redirector for a client anyone can register
    POST /token      authorization_code (PKCE S256 only) | refresh_token (rotating)
    POST /register   RFC 7591 dynamic registration (capped)
    POST /revoke     RFC 7009, for every client authentication method; revokes the token's family

A client_id that is an https URL is a Client ID Metadata Document (`server/oauth/cimd.py`): fetched,
checked and cached in place of a registration.

The issuer is `Settings.public_url` or, when unset, the request's own Host (checked against
`allowed_hosts` locally; behind API Gateway it is the API's domain); the resource is
`<issuer>/mcp`. No CORS: like /mcp, these endpoints serve native clients and server-side
connectors (claude.ai, ChatGPT), not pages of other sites."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable, Callable
from functools import lru_cache
from urllib.parse import urlencode

from mcp.server.auth.errors import stringify_pydantic_error
from mcp.server.auth.handlers.authorize import AuthorizationRequest
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError
from mcp.server.auth.provider import AuthorizationParams, AuthorizeError, construct_redirect_uri
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import InvalidRedirectUriError, ProtectedResourceMetadata
from pydantic import AnyHttpUrl, AnyUrl, BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import Receive, Scope, Send

from sessionvault.core import oauth
from sessionvault.db.audit import salted_hash
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server.edge import body_text_problem, read_body, replaying
from sessionvault.server.oauth import cimd, consent
from sessionvault.server.oauth.client_auth import HashedSecretAuthenticator, basic_credentials
from sessionvault.server.oauth.fetch_budget import FetchBudget
from sessionvault.server.oauth.provider import AUTH_METHODS, Provider
from sessionvault.server.text_checks import NUL_OR_SURROGATE
from sessionvault.telemetry import RequestLog

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
TEXT_RULE = f"text may not hold {NUL_OR_SURROGATE}"
REGISTRATION = ClientRegistrationOptions(
    enabled=True, valid_scopes=list(oauth.SCOPES), default_scopes=list(oauth.SCOPES)
)


class _Url(BaseModel):
    # No trailing slash added to a bare origin: the issuer is compared as a string (RFC 8414).
    model_config = ConfigDict(url_preserve_empty_path=True)
    url: AnyHttpUrl


@lru_cache(maxsize=32)
def _documents(base: str, client_documents: bool) -> tuple[bytes, bytes]:
    """(authorization-server metadata, protected-resource metadata) for `base`, as JSON;
    `client_documents`: whether Client ID Metadata Documents are taken (and so advertised)."""
    issuer = _Url(url=base).url  # type: ignore[arg-type]
    metadata = build_metadata(
        issuer,
        None,
        REGISTRATION,
        RevocationOptions(enabled=True),
    )
    metadata.token_endpoint_auth_methods_supported = list(AUTH_METHODS)
    metadata.revocation_endpoint_auth_methods_supported = list(AUTH_METHODS)
    # RFC 9207: every redirect back to a client names the issuer (Gemini CLI requires it).
    metadata.authorization_response_iss_parameter_supported = True
    # MCP authorization 2025-11-25: an https client_id names its metadata document (server/oauth/cimd.py).
    metadata.client_id_metadata_document_supported = client_documents
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
    """RFC 6749 section 4.1.1 with PKCE S256. The client and its exact redirect URI are checked
    first: when either is wrong, nothing is redirected. Any later error goes back to the redirect
    URI (with `state` and `iss`) only for a client that a user has approved; for any other it is
    shown on our own page, so that a client anyone can register does not make this endpoint an
    open redirector that needs no login and no click."""
    params = request.query_params if request.method == "GET" else await request.form()
    items = [(k, v) for k, v in params.multi_items() if isinstance(v, str)]
    raw = dict(items)
    repeated = sorted(k for k, n in Counter(k for k, _ in items).items() if n > 1)  # RFC 6749 3.1
    if {"client_id", "redirect_uri"} & set(repeated):
        return _error_page("invalid_request", "client_id or redirect_uri is repeated")
    found = await provider.lookup(raw.get("client_id", ""))
    if found is None:
        return _error_page("invalid_request", "unknown client")
    client = found.client
    try:
        redirect_uri = client.validate_redirect_uri(
            AnyUrl(raw["redirect_uri"]) if raw.get("redirect_uri") else None
        )
    except (InvalidRedirectUriError, ValidationError):
        return _error_page("invalid_request", "redirect_uri is missing or not registered for this client")
    if found.document and raw.get("redirect_uri") not in client.model_dump(mode="json")["redirect_uris"]:
        return _error_page(
            "invalid_request", "redirect_uri is not exactly one of the client's metadata document"
        )
    state = raw.get("state")

    def fail(error: str, description: str) -> Response:
        if not found.approved:
            return _error_page(error, description)
        echoed = state if state is not None and len(state) <= oauth.MAX_STATE_CHARS else None
        location = construct_redirect_uri(
            str(redirect_uri), error=error, error_description=description, state=echoed, iss=provider.base
        )
        return RedirectResponse(location, status_code=302, headers={"Cache-Control": "no-store"})

    if repeated:
        return fail("invalid_request", "a parameter is repeated")
    try:
        asked = AuthorizationRequest.model_validate(raw)
    except ValidationError as invalid:
        wrong_type = any(e["loc"] == ("response_type",) for e in invalid.errors())
        return fail(
            "unsupported_response_type" if wrong_type else "invalid_request",
            stringify_pydantic_error(invalid),
        )
    authorization = AuthorizationParams(
        state=asked.state,
        scopes=asked.scope.split() if asked.scope is not None else None,
        code_challenge=asked.code_challenge,
        redirect_uri=redirect_uri,
        redirect_uri_provided_explicitly=True,
        resource=asked.resource,
    )
    try:
        consent_url = await provider.authorize(client, authorization)
    except AuthorizeError as refused:
        return fail(refused.error, refused.error_description or refused.error)
    return RedirectResponse(consent_url, status_code=302, headers={"Cache-Control": "no-store"})


def _error_page(error: str, description: str) -> Response:
    """An /authorize error shown to the person whose browser is here (RFC 6749 section 4.1.2.1:
    "inform the resource owner"), on our page: nothing is sent to the client. The description is
    ours, never a value from the request."""
    body = consent.error_page(
        f"This authorization request was refused ({error}: {description}). Nothing was sent back "
        "to the application. Start again from it, or tell its makers."
    )
    return Response(
        body, status_code=400, media_type="text/html; charset=utf-8", headers=consent.page_headers()
    )


async def _token(request: Request, provider: Provider) -> Response:
    form = await request.form()  # parsed once: Starlette keeps it for the SDK's handler
    resource = form.get("resource")
    if resource is not None and resource != provider.resource:  # RFC 8707: not ours
        return JSONResponse({"error": "invalid_target"}, status_code=400, headers=NO_STORE)
    basic = basic_credentials(request.headers.get("authorization", ""))
    urlencoded = request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded")
    if "client_id" not in form and basic and urlencoded:
        # RFC 6749 section 2.3.1: with HTTP Basic the header names the client; the SDK's
        # handler reads client_id from the form only.
        fields = [(k, v) for k, v in form.multi_items() if isinstance(v, str)]
        request = Request(request.scope, replaying(urlencode([*fields, ("client_id", basic[0])]).encode()))
        form = await request.form()
    provider.form = {k: v for k, v in form.items() if isinstance(v, str)}
    handler = TokenHandler(provider, HashedSecretAuthenticator(provider))
    response: Response = await handler.handle(request)
    return response


async def _register(request: Request, provider: Provider) -> Response:
    return await RegistrationHandler(provider, REGISTRATION).handle(request)


async def _revoke(request: Request, provider: Provider) -> Response:
    """RFC 7009 for every authentication method a client may have registered: `none` (client_id
    in the form), `client_secret_post` and `client_secret_basic`. A wrong client is a 401
    `invalid_client`; a missing token a 400; any other token, unknown or another client's, a
    200 that changes nothing. The token's whole family (access and refresh) is revoked."""
    try:
        client = await HashedSecretAuthenticator(provider).authenticate_request(request)
    except AuthenticationError:
        headers = dict(NO_STORE)
        if request.headers.get("authorization", "")[:6].lower() == "basic ":
            headers["WWW-Authenticate"] = 'Basic realm="SessionVault"'
        body = {"error": "invalid_client", "error_description": "client authentication failed"}
        return JSONResponse(body, status_code=401, headers=headers)
    token = (await request.form()).get("token")
    if not isinstance(token, str) or not token:
        body = {"error": "invalid_request", "error_description": "token is required"}
        return JSONResponse(body, status_code=400, headers=NO_STORE)
    if len(token) <= 200:  # longer is no token of ours: nothing to look up
        await provider.revoke(token, client.client_id or "")
    return Response(status_code=200, headers=NO_STORE)


ENDPOINTS: dict[str, tuple[tuple[str, ...], str, Handler]] = {
    "/authorize": (("GET", "POST"), "oauth/authorize", _authorize),
    "/token": (("POST",), "oauth/token", _token),
    "/register": (("POST",), "oauth/register", _register),
    "/revoke": (("POST",), "oauth/revoke", _revoke),
}


class OAuthServer:
    """Dispatches the OAuth paths; `app.py` has already checked the Host. `fetcher` fetches
    Client ID Metadata Documents; left out, production's (system trust, public addresses only).
    Tests pass one that trusts their CA and may reach 127.0.0.1."""

    def __init__(self, rt: Runtime, fetcher: cimd.Fetcher | None = None) -> None:
        self.rt = rt
        if fetcher is None and rt.settings.oauth_client_documents:
            fetcher = cimd.Fetcher()
        if fetcher is not None and fetcher.budget is None:  # every fetch a server makes is charged
            fetcher.budget = FetchBudget.from_settings(rt.settings)
        self.fetcher = fetcher  # None: no metadata documents (settings.oauth_client_documents)

    def serves(self, path: str, base: str) -> bool:
        return path in ENDPOINTS or path in well_known_paths(base)

    async def handle(self, scope: Scope, receive: Receive, send: Send, base: str, log: RequestLog) -> None:
        path, method = scope["path"].rstrip("/") or "/", scope["method"]
        documents = well_known_paths(base)
        if path in documents:
            log.tool = "oauth/metadata"
            if method != "GET":
                raise Refused(405, b'{"error": "method not allowed"}', "validation", {"Allow": "GET"})
            body = _documents(base, self.fetcher is not None)[documents[path]]
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
            problem = body_text_problem(scope, body)  # a JSON body (/register); forms: app.py
            if problem:
                said = {"error": "invalid_client_metadata", "error_description": f"{TEXT_RULE}: {problem}"}
                raise Refused(400, json.dumps(said).encode(), "validation", NO_STORE)
            request = Request(scope, replaying(body))
            address = salted_hash(log.ip, self.rt.settings.audit_salt)
            provider = Provider(self.rt, base, address, fetcher=self.fetcher)
            response = await handler(request, provider)
            # Why a client was not found (a metadata document refused): the log and the
            # AuthFailures metric only; the caller sees an unknown client.
            log.auth_reason = log.auth_reason or provider.problem
        if response.status_code >= 400:
            log.error_class = "auth" if response.status_code == 401 else "validation"
        await response(scope, replaying(b""), send)
