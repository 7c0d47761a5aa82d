"""The whole OAuth 2.1 flow with the official MCP Python client (`OAuthClientProvider`) against a
real server: the 401 names the protected-resource metadata, the client discovers the
authorization server, registers itself, sends the owner to the consent page (here: followed
over HTTP and approved with a real API key), exchanges the code (PKCE S256) for tokens, lists
the tools, and refreshes when its access token is due."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from ..conftest import make_user
from ..support import oauth as flow

pytestmark = pytest.mark.anyio


class MemoryStorage:
    """The client's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """Stands in for the person: follows the authorization URL to the consent page, pastes the
    key, approves, and hands the code the callback received back to the client."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.visited: list[str] = []
        self.result: AuthorizationCodeResult | None = None

    async def redirect_handler(self, url: str) -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            to_consent = await http.get(url)
            assert to_consent.status_code == 302
            page = await http.get(to_consent.headers["location"])
            self.visited.append(page.text)
            parts = urlsplit(to_consent.headers["location"])
            form = {
                "request": parse_qs(parts.query)["request"][0],
                "csrf": re.search(r'name="csrf" value="([^"]+)"', page.text).group(1),  # type: ignore[union-attr]
                "api_key": self.key,
                "decision": "approve",
            }
            back = await http.post(f"{parts.scheme}://{parts.netloc}/consent", data=form)
        assert back.status_code == 303, back.text
        query = parse_qs(urlsplit(back.headers["location"]).query)
        # RFC 9207: the SDK checks `iss` against the issuer it discovered.
        code, state, iss = (query[k][0] for k in ("code", "state", "iss"))
        self.result = AuthorizationCodeResult(code=code, state=state, iss=iss)

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


async def test_the_official_client_discovers_registers_is_approved_lists_tools_and_refreshes(server, runtime):
    user = make_user(runtime, scopes=("read", "write"))
    browser, storage = Browser(user.key), MemoryStorage()
    provider = OAuthClientProvider(
        server.url,
        OAuthClientMetadata(
            client_name="Flow Test Client",
            redirect_uris=[AnyUrl(flow.CALLBACK)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="client_secret_post",
        ),
        storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    http = httpx2.AsyncClient(auth=provider, timeout=30)
    async with Client(streamable_http_client(server.url, http_client=http)) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        first = storage.tokens
        assert first is not None and first.access_token.startswith("sv_at_")
        assert first.refresh_token is not None and first.refresh_token.startswith("sv_rt_")
        assert first.scope == "read write" and first.expires_in == 3600
        # the consent page named the client and where the browser goes back to
        assert "Flow Test Client" in browser.visited[0] and "127.0.0.1:33418" in browser.visited[0]
        # the token carries the key's scopes: the same tools as the key itself would list
        assert tools == {"save_session", "load_session", "search_sessions", "list_sessions"}

        saved = await client.call_tool("save_session", {"name": "via-oauth", "summary": "hello"})
        assert not saved.is_error

        provider.context.token_expiry_time = 1.0  # due: the next call refreshes first
        loaded = await client.call_tool("load_session", {"name": "via-oauth"})
        assert not loaded.is_error and loaded.structured_content["summary"] == "hello"  # type: ignore[index]
        second = storage.tokens
        assert second is not None and second.access_token != first.access_token
        assert second.refresh_token != first.refresh_token  # rotated
    assert storage.client_info is not None and storage.client_info.client_secret  # registered once


async def test_the_401_points_at_metadata_that_points_at_this_server(server):
    base = flow.base_of(server.url)
    async with httpx2.AsyncClient(timeout=30) as http:
        refused = await http.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        challenge = refused.headers["www-authenticate"]
        assert challenge == f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            resource = (await http.get(base + path)).json()
            assert resource["resource"] == server.url and resource["authorization_servers"] == [base]
        metadata = (await http.get(base + "/.well-known/oauth-authorization-server")).json()
    assert metadata["issuer"] == base
    assert metadata["authorization_endpoint"] == base + "/authorize"
    assert metadata["token_endpoint"] == base + "/token"
    assert metadata["registration_endpoint"] == base + "/register"
    assert metadata["revocation_endpoint"] == base + "/revoke"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert metadata["scopes_supported"] == ["read", "write", "delete"]
    assert metadata["authorization_response_iss_parameter_supported"] is True  # RFC 9207
    assert metadata["client_id_metadata_document_supported"] is True  # CIMD: tests/e2e/test_cimd.py
    assert metadata["revocation_endpoint_auth_methods_supported"] == [
        "none",
        "client_secret_post",
        "client_secret_basic",
    ]
