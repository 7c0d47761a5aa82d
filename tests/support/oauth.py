"""Driving the OAuth endpoints by hand (plain HTTP, no MCP client): register a client, start an
authorization, read and post the consent page, exchange the code, refresh. For the flow and
attack tests, and for the browser test of the consent page:

    with httpx2.Client() as http:
        client = register(http, base)                        # a fresh client, loopback callback
        pending = start(http, base, client)                   # pending.consent_url: open it
        ...a browser approves with a key, lands on pending.redirect_uri?code=..&state=..
        tokens = exchange(http, base, client, code, pending)  # {"access_token": ..}

`base` is the server's origin, e.g. `ServerThread.url` without `/mcp` (`base_of`)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2

CALLBACK = "http://127.0.0.1:33418/callback"  # nothing listens: the tests read the Location


def base_of(mcp_url: str) -> str:
    return mcp_url.removesuffix("/mcp")


@dataclass(frozen=True)
class Registered:
    client_id: str
    client_secret: str | None
    redirect_uri: str
    info: dict[str, Any]


@dataclass(frozen=True)
class Pending:
    request_id: str
    consent_url: str
    redirect_uri: str
    state: str
    verifier: str


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def register(
    http: httpx2.Client,
    base: str,
    redirect_uris: tuple[str, ...] = (CALLBACK,),
    *,
    name: str = "Test Client",
    auth_method: str = "client_secret_post",
    **extra: Any,
) -> Registered:
    body = {
        "redirect_uris": list(redirect_uris),
        "client_name": name,
        "token_endpoint_auth_method": auth_method,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        **extra,
    }
    reply = http.post(f"{base}/register", json=body)
    assert reply.status_code == 201, reply.text
    info = reply.json()
    return Registered(info["client_id"], info.get("client_secret"), redirect_uris[0], info)


def authorize_params(
    client: Registered, challenge: str, state: str, *, redirect_uri: str | None = None, **extra: str
) -> dict[str, str]:
    return {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": redirect_uri or client.redirect_uri,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **extra,
    }


def start(http: httpx2.Client, base: str, client: Registered, **extra: str) -> Pending:
    """GET /authorize; the pending request the server made (its consent page's URL)."""
    verifier, challenge = pkce()
    state = secrets.token_urlsafe(16)
    reply = http.get(f"{base}/authorize", params=authorize_params(client, challenge, state, **extra))
    assert reply.status_code == 302, reply.text
    location = reply.headers["location"]
    request_id = parse_qs(urlsplit(location).query)["request"][0]
    return Pending(request_id, location, client.redirect_uri, state, verifier)


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


def decide(
    http: httpx2.Client,
    base: str,
    pending: Pending,
    key: str,
    decision: str = "approve",
    csrf: str | None = None,
) -> httpx2.Response:
    """Open the consent page and post it (as a browser would): the server's answer."""
    page = http.get(pending.consent_url)
    assert page.status_code == 200, page.text
    form = {
        "request": pending.request_id,
        "csrf": csrf or csrf_of(page.text),
        "api_key": key,
        "decision": decision,
    }
    return http.post(
        f"{base}/consent",
        content=urlencode(form),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )


def redirect_params(reply: httpx2.Response) -> dict[str, str]:
    assert reply.status_code == 303, (reply.status_code, reply.text[:300])
    return {k: v[0] for k, v in parse_qs(urlsplit(reply.headers["location"]).query).items()}


def approve(http: httpx2.Client, base: str, pending: Pending, key: str) -> str:
    """The code the server sends back to the redirect URI (state checked)."""
    params = redirect_params(decide(http, base, pending, key))
    assert params["state"] == pending.state
    assert params["iss"] == base  # RFC 9207: the client can tell which server answered
    return params["code"]


def token_request(http: httpx2.Client, base: str, client: Registered, **form: str) -> httpx2.Response:
    body = {"client_id": client.client_id, **form}
    if client.client_secret:
        body["client_secret"] = client.client_secret
    return http.post(
        f"{base}/token",
        content=urlencode(body),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )


def exchange(
    http: httpx2.Client, base: str, client: Registered, code: str, pending: Pending, **extra: str
) -> httpx2.Response:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": pending.redirect_uri,
        "code_verifier": pending.verifier,
        **extra,
    }
    return token_request(http, base, client, **form)


def refresh(
    http: httpx2.Client, base: str, client: Registered, refresh_token: str, **extra: str
) -> httpx2.Response:
    return token_request(http, base, client, grant_type="refresh_token", refresh_token=refresh_token, **extra)


def grant(http: httpx2.Client, base: str, key: str, **authorize: str) -> tuple[Registered, dict[str, Any]]:
    """Register, authorize, approve with `key`, exchange: the client and its token response."""
    client = register(http, base)
    pending = start(http, base, client, **authorize)
    reply = exchange(http, base, client, approve(http, base, pending, key), pending)
    assert reply.status_code == 200, reply.text
    return client, reply.json()


def list_tools(http: httpx2.Client, mcp_url: str, bearer: str) -> httpx2.Response:
    """tools/list with `bearer` ("": no Authorization header at all)."""
    headers = {"Accept": "application/json, text/event-stream"}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    return http.post(mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)


def call_tool(
    http: httpx2.Client, mcp_url: str, bearer: str, name: str, arguments: dict[str, Any]
) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return http.post(
        mcp_url,
        json=body,
        headers={"Authorization": f"Bearer {bearer}", "Accept": "application/json, text/event-stream"},
    )
