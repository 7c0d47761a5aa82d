"""OAuth on Lambda: the discovery documents, the 401's pointer to them, and the whole
authorization-code flow, each step one API Gateway v2 event through the MCP function under
Mangum. The issuer is SESSIONVAULT_PUBLIC_URL (the template's PublicUrl or the API's own URL);
without it, the API's domain from the Host header."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from ..support import oauth as flow
from .conftest import LambdaContext, body_json, http_event, load_handler, rpc

PUBLIC_URL = "https://vault.example.com"
API_HOST = "abc123.execute-api.us-east-1.amazonaws.com"
MCP_HEADERS = {"mcp-protocol-version": "2025-06-18"}
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def public_url(aws, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SESSIONVAULT_PUBLIC_URL", PUBLIC_URL)
    return PUBLIC_URL


@pytest.fixture
def cold_start(aws) -> Iterator[Callable[[str], Any]]:
    """Loads a function as a new execution environment; closes its pool after the test (a
    pool left to the garbage collector warns from its own worker thread)."""
    loaded: list[Any] = []

    def load(function: str) -> Any:
        loaded.append(load_handler(function))
        return loaded[-1]

    yield load
    for module in loaded:
        module.RUNTIME.close()


def event(
    method: str,
    path: str,
    body: str = "",
    *,
    query: dict[str, str] | None = None,
    host: str = API_HOST,
    **headers: str,
) -> dict[str, Any]:
    """`http_event` with a query string, and the Host the client used (a custom domain's)."""
    built = http_event(body, method=method, path=path, host=host, **headers)
    built["rawQueryString"] = urlencode(query or {})
    built["requestContext"]["domainName"] = host
    return built


def invoke(function: Any, built: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = function.handler(built, LambdaContext())
    return response


def get_json(function: Any, path: str, host: str = API_HOST) -> tuple[dict[str, Any], Any]:
    response = invoke(function, event("GET", path, host=host))
    assert response["statusCode"] == 200, response
    assert response["headers"]["content-type"].startswith("application/json")
    return response, body_json(response)


def new_key(admin: Any) -> str:
    name = f"u-{secrets.token_hex(4)}"
    user = admin.handler({"action": "create_user", "name": name}, LambdaContext())
    made = admin.handler(
        {"action": "create_key", "user_id": user["user_id"], "label": "oauth"}, LambdaContext()
    )
    key: str = made["key"]
    return key


def test_the_discovery_documents_name_the_public_url(public_url: str, cold_start) -> None:
    mcp = cold_start("mcp")
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        _, resource = get_json(mcp, path, host="vault.example.com")
        assert resource["resource"] == f"{public_url}/mcp"
        assert resource["authorization_servers"] == [public_url]
        assert resource["scopes_supported"] == ["read", "write", "delete"]
    _, server = get_json(mcp, "/.well-known/oauth-authorization-server", host="vault.example.com")
    assert server["issuer"] == public_url
    for endpoint, path in {
        "authorization_endpoint": "/authorize",
        "token_endpoint": "/token",
        "registration_endpoint": "/register",
        "revocation_endpoint": "/revoke",
    }.items():
        assert server[endpoint] == public_url + path
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert set(server["grant_types_supported"]) == {"authorization_code", "refresh_token"}


def test_the_issuer_is_the_public_url_whatever_host_reached_the_function(public_url: str, cold_start) -> None:
    """API Gateway's own domain still answers with the custom domain's URLs: tokens are bound
    to one resource, whichever address reached the function."""
    mcp = cold_start("mcp")
    _, server = get_json(mcp, "/.well-known/oauth-authorization-server", host=API_HOST)
    assert server["issuer"] == public_url


def test_without_a_public_url_the_issuer_is_the_apis_own_https_domain(cold_start) -> None:
    mcp = cold_start("mcp")
    _, server = get_json(mcp, "/.well-known/oauth-authorization-server")
    assert server["issuer"] == f"https://{API_HOST}"
    _, resource = get_json(mcp, "/.well-known/oauth-protected-resource/mcp")
    assert resource["resource"] == f"https://{API_HOST}/mcp"


def test_every_401_from_mcp_points_at_the_resource_metadata(public_url: str, cold_start) -> None:
    mcp = cold_start("mcp")
    tools = rpc("tools/list")
    answers = [
        invoke(mcp, http_event(tools, **MCP_HEADERS)),
        invoke(mcp, http_event(tools, key="sv_live_" + "B" * 32, **MCP_HEADERS)),
        invoke(mcp, http_event(tools, key="sv_at_" + "C" * 43, **MCP_HEADERS)),
    ]
    expected = f'Bearer resource_metadata="{public_url}/.well-known/oauth-protected-resource/mcp"'
    assert [a["statusCode"] for a in answers] == [401, 401, 401]
    assert {a["headers"]["www-authenticate"] for a in answers} == {expected}
    assert len({a["body"] for a in answers}) == 1  # identical whatever was wrong


def test_a_head_or_get_of_mcp_without_a_credential_is_the_same_challenge(public_url: str, cold_start) -> None:
    """Gemini CLI probes /mcp with HEAD before it has a token (template: the McpHead route)."""
    mcp = cold_start("mcp")
    expected = f'Bearer resource_metadata="{public_url}/.well-known/oauth-protected-resource/mcp"'
    for method in ("HEAD", "GET"):
        answer = invoke(mcp, event(method, "/mcp"))
        assert answer["statusCode"] == 401, (method, answer)
        assert answer["headers"]["www-authenticate"] == expected


def test_the_whole_flow_works_across_lambda_instances(public_url: str, cold_start) -> None:
    """Register, authorize, consent, token and tools/list, each on a fresh cold-started
    instance: all state is in Postgres and the consent form's CSRF value is stateless."""
    key = new_key(cold_start("admin"))
    instances = [cold_start("mcp") for _ in range(2)]

    def call(n: int, built: dict[str, Any]) -> dict[str, Any]:
        return invoke(instances[n % 2], built)

    host = "vault.example.com"
    callback = "https://client.example.org/oauth/callback"
    registration = {
        "redirect_uris": [callback],
        "client_name": "Lambda Test Client",
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    }
    registered = call(0, event("POST", "/register", json.dumps(registration), host=host))
    assert registered["statusCode"] == 201, registered
    client_id = body_json(registered)["client_id"]

    verifier, challenge = flow.pkce()
    state = secrets.token_urlsafe(16)
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": callback,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": "read write",
        "resource": f"{public_url}/mcp",
    }
    authorized = call(1, event("GET", "/authorize", query=query, host=host))
    assert authorized["statusCode"] == 302, authorized
    consent_url = authorized["headers"]["location"]
    assert consent_url.startswith(f"{public_url}/consent?request=")
    request_id = parse_qs(urlsplit(consent_url).query)["request"][0]

    page = call(0, event("GET", "/consent", query={"request": request_id}, host=host))
    assert page["statusCode"] == 200
    assert "frame-ancestors 'none'" in page["headers"]["content-security-policy"]
    html = page_text(page)
    assert "Lambda Test Client" in html and "client.example.org" in html
    form = {"request": request_id, "csrf": flow.csrf_of(html), "api_key": key, "decision": "approve"}
    posted = call(
        1, event("POST", "/consent", urlencode(form), host=host, content_type=FORM, origin=public_url)
    )
    assert posted["statusCode"] == 303, posted
    back = parse_qs(urlsplit(posted["headers"]["location"]).query)
    assert posted["headers"]["location"].startswith(callback + "?")
    assert back["state"] == [state]

    exchange = {
        "grant_type": "authorization_code",
        "client_id": client_id,
        "code": back["code"][0],
        "redirect_uri": callback,
        "code_verifier": verifier,
        "resource": f"{public_url}/mcp",
    }
    tokens = call(0, event("POST", "/token", urlencode(exchange), host=host, content_type=FORM))
    assert tokens["statusCode"] == 200, tokens
    access = body_json(tokens)["access_token"]

    listed = call(1, http_event(rpc("tools/list"), key=access, host=host, **MCP_HEADERS))
    assert listed["statusCode"] == 200, listed
    names = {tool["name"] for tool in body_json(listed)["result"]["tools"]}
    assert {"save_session", "load_session", "list_sessions"} <= names


def page_text(response: dict[str, Any]) -> str:
    body: str = response["body"]
    return base64.b64decode(body).decode() if response.get("isBase64Encoded") else body
