"""The OAuth provider the MCP SDK's handlers call (`OAuthAuthorizationServerProvider`), over
Postgres (`db.oauth`): registered clients with exact redirect URIs, clients known by the URL of
their metadata document (CIMD, fetched by `server/oauth/cimd.py` and cached in the same table),
pending requests, codes and tokens, every write through the definer functions of 0005 and 0008,
and client secrets checked against their hashes (`client_auth.HashedSecretAuthenticator`, in place of the
SDK's plaintext comparison)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import (
    InvalidRedirectUriError,
    OAuthClientInformationFull,
    OAuthToken,
)
from pydantic import AnyUrl, ValidationError

from sessionvault.core import oauth
from sessionvault.db import oauth as store
from sessionvault.errors import DocumentError
from sessionvault.runtime import Runtime
from sessionvault.server.oauth import cimd

AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")


class RegisteredClient(OAuthClientInformationFull):
    """A stored client. Redirect URIs match by string equality with what was registered (both
    sides in the URL parser's canonical form), never by prefix or pattern."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None:  # OAuth 2.1 clients send it; requiring it keeps /token exact
            raise InvalidRedirectUriError("redirect_uri is required")
        if str(redirect_uri) not in {str(uri) for uri in self.redirect_uris or ()}:
            raise InvalidRedirectUriError("redirect_uri is not registered for this client")
        return redirect_uri


@dataclass(frozen=True)
class Found:
    client: RegisteredClient
    secret_hash: bytes | None  # None: a public client
    approved: bool  # some user has approved it: /authorize may send its errors back to it
    document: bool  # known by its metadata document (CIMD): redirect URIs match byte for byte


@dataclass
class Provider:
    """`OAuthAuthorizationServerProvider` over Postgres, built per request: it knows the base
    URL and, at /token, the form (the PKCE verifier and redirect URI are checked again in SQL,
    and the SDK does not pass them on)."""

    rt: Runtime
    base: str
    address: bytes | None = None  # the caller's address, salted and hashed as in the audit trail
    form: Mapping[str, str] = field(default_factory=dict)
    fetcher: cimd.Fetcher | None = None  # None: no metadata documents (URL client ids unknown)
    problem: str = ""  # why a client was not found, for the log line (never for the caller)

    @property
    def resource(self) -> str:
        return oauth.resource_url(self.base)

    async def _db(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, self.rt.db, *args)

    async def lookup(self, client_id: str) -> Found | None:
        """A client, registered or described by its metadata document (fetched when not cached
        or expired), or None."""
        if not client_id or len(client_id) > oauth.MAX_CLIENT_ID_CHARS:
            return None
        found: store.Client | None = await self._db(store.client, client_id)
        if oauth.is_metadata_document_url(client_id) and (
            found is None or (found.document and not found.fresh)
        ):
            found = await self._document(client_id, found)
        if found is None:
            return None
        try:
            client = RegisteredClient.model_validate({**found.info, "client_id": found.client_id})
        except ValidationError:
            self.problem = "invalid_stored_client"
            return None
        return Found(client, found.secret_hash, found.approved, found.document)

    async def _document(self, client_id: str, cached: store.Client | None) -> store.Client | None:
        """Fetch and check a client's metadata document and store it (the cache), or None."""
        if self.fetcher is None:
            self.problem = "cimd_disabled"
            return None
        try:
            document = await self.fetcher.fetch(client_id, self.address)  # charged before it is sent
        except DocumentError as exc:
            self.problem = f"cimd_{exc.code}"
            return None
        settings = self.rt.settings
        caps = (settings.oauth_registrations_per_hour, settings.oauth_registrations_per_address)
        outcome = await self._db(store.document, client_id, document.info, document.ttl_s, caps, self.address)
        if outcome != "ok":
            self.problem = f"cimd_{outcome}"
            return None
        approved = cached.approved if cached is not None else False
        return store.Client(client_id, None, document.info, approved, document=True, fresh=True)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        found = await self.lookup(client_id)
        return None if found is None else found.client

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
        asked = " ".join(params.scopes) if params.scopes is not None else None
        scopes = oauth.request_scopes(asked, client.scope)  # none asked: the registered scope
        if scopes is None:
            raise AuthorizeError("invalid_scope", "a scope that is unknown or not registered for this client")
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
        access, refresh, pair = _new_pair()
        minted: store.Minted = await anyio.to_thread.run_sync(
            lambda: store.exchange(
                self.rt.db,
                oauth.digest(authorization_code.code),
                client_id=client.client_id or "",
                redirect_uri=_canonical(self.form.get("redirect_uri", "")),
                verifier=self.form.get("code_verifier", ""),
                resource=self.resource,
                pair=pair,
            )
        )
        return _tokens(minted, access, refresh)

    async def _load(self, token: str, kind: str) -> dict[str, Any] | None:
        """A live token of `kind` as the SDK's models take it, or None."""
        found: store.Token | None = await self._db(store.token, oauth.digest(token))
        if found is None or found.kind != kind:
            return None
        return {
            "token": token,
            "client_id": found.client_id,
            "scopes": list(found.scopes),
            "expires_at": int(found.expires_at.timestamp()),
            "resource": found.resource,
        }

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = await self._load(refresh_token, "refresh")
        return None if found is None else RefreshToken(**found)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        access, refresh, pair = _new_pair()
        minted: store.Minted = await anyio.to_thread.run_sync(
            lambda: store.refresh(
                self.rt.db,
                oauth.digest(refresh_token.token),
                client_id=client.client_id or "",
                scopes=tuple(scopes),
                resource=self.resource,
                pair=pair,
            )
        )
        return _tokens(minted, access, refresh)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = await self._load(token, "access")
        return None if found is None else AccessToken(**found)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await self.revoke(token.token, token.client_id)

    async def revoke(self, token: str, client_id: str) -> None:
        """RFC 7009: the family of `token` if it is `client_id`'s, whatever its state; else nothing."""
        await self._db(store.revoke, oauth.digest(token), client_id)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: Any
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "not supported")


def _canonical(uri: str) -> str:
    try:
        return str(AnyUrl(uri)) if uri else ""
    except ValidationError:
        return ""


def _new_pair() -> tuple[str, str, store.Pair]:
    """A fresh access and refresh token, and what the database keeps of them."""
    access, refresh = oauth.new_access_token(), oauth.new_refresh_token()
    pair = store.Pair(oauth.digest(access), oauth.digest(refresh), oauth.ACCESS_TTL_S, oauth.REFRESH_TTL_S)
    return access, refresh, pair


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
