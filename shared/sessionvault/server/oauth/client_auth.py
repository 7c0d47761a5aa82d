"""How a client proves who it is at the token endpoint: by the method it registered, against
the stored SHA-256 of its secret (the secret itself is shown once, at registration)."""

from __future__ import annotations

import base64
import binascii
import hmac
from urllib.parse import unquote_plus

from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.shared.auth import OAuthClientInformationFull
from starlette.requests import Request

from sessionvault.core import oauth
from sessionvault.server.oauth.provider import Provider


class HashedSecretAuthenticator(ClientAuthenticator):
    """The SDK's client authentication, against the stored SHA-256 of the client secret (the
    secret itself is shown once, at registration, and never stored), by the method the client
    registered: `none` (the client_id alone), `client_secret_post` (both in the form) or
    `client_secret_basic` (both in the Authorization header; client_id in the form optional)."""

    def __init__(self, provider: Provider) -> None:
        super().__init__(provider)
        self.store = provider

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        raw = form.get("client_id")
        basic = basic_credentials(request.headers.get("authorization", ""))
        client_id = raw if isinstance(raw, str) and raw else (basic[0] if basic else "")
        found = await self.store.lookup(client_id) if client_id else None
        if found is None:
            raise AuthenticationError("invalid client")
        client, secret_hash = found.client, found.secret_hash
        method = client.token_endpoint_auth_method
        if method == "client_secret_basic":
            secret = basic[1] if basic and basic[0] == client_id else None
        elif method == "client_secret_post":
            posted = form.get("client_secret")
            secret = posted if isinstance(posted, str) else None
        else:
            secret = None
        if secret_hash is None:
            if method != "none":
                raise AuthenticationError("invalid client")
            return client
        if not secret or not hmac.compare_digest(oauth.digest(secret), secret_hash):
            raise AuthenticationError("invalid client")
        return client


def basic_credentials(header: str) -> tuple[str, str] | None:
    """(client_id, secret) from `Authorization: Basic ...` (RFC 6749 section 2.3.1: each
    form-urlencoded), or None."""
    if header[:6].lower() != "basic ":
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, secret = decoded.partition(":")
    return (unquote_plus(user), unquote_plus(secret)) if sep and user else None
