"""A second review of the OAuth authorization server, over real HTTP against a real server and
database: /authorize as an open redirector, revocation for every client authentication method,
the registered scope as the default, and which OAuth client an audit row belongs to. Each test
here failed before its fix."""

from __future__ import annotations

import base64
import time
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import httpx2
import psycopg
import pytest

from sessionvault.core import oauth

from ..conftest import ServerThread, make_user
from ..support import oauth as flow

EVIL = "https://evil.example/cb"  # registration is open: anyone may register any https URI

# What an anonymous caller can put on /authorize to get an error answered (and the error).
BAD_REQUESTS: list[tuple[dict[str, str], str]] = [
    ({"scope": "bogus"}, "invalid_scope"),
    ({"code_challenge": "short"}, "invalid_request"),
    ({"code_challenge_method": "plain"}, "invalid_request"),
    ({"resource": "https://other.example/mcp"}, "invalid_target"),
    ({"response_type": "token"}, "unsupported_response_type"),
]


def unauthorized(reply: httpx2.Response) -> bool:
    return reply.status_code == 401 and reply.content == b'{"error": "unauthorized"}'


def an_error_page(reply: httpx2.Response, error: str) -> bool:
    return (
        reply.status_code == 400
        and "location" not in reply.headers
        and reply.headers["content-type"].startswith("text/html")
        and "frame-ancestors 'none'" in reply.headers["content-security-policy"]
        and reply.headers["cache-control"] == "no-store"
        and error in reply.text
    )


def approved(http: httpx2.Client, base: str, key: str, **register: Any) -> flow.Registered:
    """A client that a user has approved once: its errors may go back to its redirect URI."""
    client = flow.register(http, base, **register)
    flow.approve(http, base, flow.start(http, base, client), key)
    return client


# --- 2. /authorize is not an open redirector -------------------------------------------------


@pytest.mark.parametrize(("bad", "error"), BAD_REQUESTS)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_an_unapproved_client_gets_an_error_page_not_a_redirect(
    server: ServerThread, http: httpx2.Client, bad: dict[str, str], error: str, method: str
) -> None:
    base = flow.base_of(server.url)
    client = flow.register(http, base, (EVIL,), name="Totally Legit")
    _, challenge = flow.pkce()
    params = {**flow.authorize_params(client, challenge, "s"), **bad}
    if method == "GET":
        reply = http.get(f"{base}/authorize", params=params)
    else:
        reply = http.post(f"{base}/authorize", data=params)
    assert an_error_page(reply, error), (reply.status_code, reply.headers, reply.text[:300])
    assert "evil.example" not in reply.text  # nothing to click through to


@pytest.mark.parametrize(
    "params",
    [
        {"client_id": "no-such-client"},
        {"redirect_uri": "https://attacker.example/cb"},
        {"redirect_uri": ""},
    ],
)
def test_an_unknown_client_or_redirect_uri_gets_the_error_page_too(
    server: ServerThread, http: httpx2.Client, params: dict[str, str]
) -> None:
    base = flow.base_of(server.url)
    client = flow.register(http, base)
    _, challenge = flow.pkce()
    reply = http.get(f"{base}/authorize", params={**flow.authorize_params(client, challenge, "s"), **params})
    assert an_error_page(reply, "invalid_request")


@pytest.mark.parametrize(("bad", "error"), BAD_REQUESTS)
def test_an_approved_client_gets_its_error_at_its_redirect_uri_with_iss(
    server: ServerThread, runtime: Any, http: httpx2.Client, bad: dict[str, str], error: str
) -> None:
    base = flow.base_of(server.url)
    client = approved(http, base, make_user(runtime).key)
    _, challenge = flow.pkce()
    reply = http.get(f"{base}/authorize", params={**flow.authorize_params(client, challenge, "st"), **bad})
    assert reply.status_code == 302
    location = reply.headers["location"]
    assert location.startswith(flow.CALLBACK + "?")
    query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    assert query["error"] == error and query["state"] == "st"
    assert query["iss"] == base  # RFC 9207, on every redirect
    assert reply.headers["cache-control"] == "no-store"


def test_a_good_request_still_goes_to_the_consent_page(server: ServerThread, http: httpx2.Client) -> None:
    base = flow.base_of(server.url)
    pending = flow.start(http, base, flow.register(http, base, (EVIL,)))
    assert pending.consent_url.startswith(f"{base}/consent?request=")


# --- 3. revocation for every client authentication method -------------------------------------


def basic(client_id: str, secret: str) -> str:
    return (
        "Basic " + base64.b64encode(f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()).decode()
    )


def post_form(
    http: httpx2.Client, url: str, form: dict[str, str], headers: dict[str, str] | None = None
) -> httpx2.Response:
    return http.post(
        url,
        content=urlencode(form),
        headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})},
    )


def client_auth(
    client: flow.Registered, method: str, *, id_in_body: bool = True
) -> tuple[dict[str, str], dict[str, str]]:
    """(form fields, headers) that authenticate `client` by `method`."""
    if method == "none":
        return {"client_id": client.client_id}, {}
    if method == "client_secret_post":
        return {"client_id": client.client_id, "client_secret": client.client_secret or ""}, {}
    form = {"client_id": client.client_id} if id_in_body else {}
    return form, {"Authorization": basic(client.client_id, client.client_secret or "")}


def tokens_for(
    http: httpx2.Client, base: str, key: str, method: str
) -> tuple[flow.Registered, dict[str, Any]]:
    client = flow.register(http, base, auth_method=method)
    assert (client.client_secret is None) == (method == "none")
    pending = flow.start(http, base, client)
    code = flow.approve(http, base, pending, key)
    form, headers = client_auth(client, method)
    body = {
        **form,
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": pending.redirect_uri,
        "code_verifier": pending.verifier,
    }
    reply = post_form(http, f"{base}/token", body, headers)
    assert reply.status_code == 200, reply.text
    return client, reply.json()


def refresh_with(
    http: httpx2.Client, base: str, client: flow.Registered, method: str, token: str
) -> httpx2.Response:
    form, headers = client_auth(client, method)
    return post_form(
        http, f"{base}/token", {**form, "grant_type": "refresh_token", "refresh_token": token}, headers
    )


@pytest.mark.parametrize("which", ["access_token", "refresh_token"])
@pytest.mark.parametrize("method", ["none", "client_secret_post", "client_secret_basic"])
def test_revocation_works_for_every_registered_auth_method_and_ends_the_family(
    server: ServerThread, runtime: Any, http: httpx2.Client, method: str, which: str
) -> None:
    base = flow.base_of(server.url)
    client, tokens = tokens_for(http, base, make_user(runtime).key, method)
    assert flow.list_tools(http, server.url, tokens["access_token"]).status_code == 200
    form, headers = client_auth(client, method, id_in_body=False)  # Basic: the header names it
    reply = post_form(http, f"{base}/revoke", {**form, "token": tokens[which]}, headers)
    assert reply.status_code == 200, reply.text
    assert reply.headers["cache-control"] == "no-store"
    assert unauthorized(flow.list_tools(http, server.url, tokens["access_token"]))
    refreshed = refresh_with(http, base, client, method, tokens["refresh_token"])
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"


@pytest.mark.parametrize("method", ["client_secret_post", "client_secret_basic"])
def test_revocation_with_a_wrong_secret_is_a_401_and_revokes_nothing(
    server: ServerThread, runtime: Any, http: httpx2.Client, method: str
) -> None:
    base = flow.base_of(server.url)
    client, tokens = tokens_for(http, base, make_user(runtime).key, method)
    wrong = flow.Registered(client.client_id, "wrong-secret", client.redirect_uri, client.info)
    form, headers = client_auth(wrong, method)
    reply = post_form(http, f"{base}/revoke", {**form, "token": tokens["refresh_token"]}, headers)
    assert reply.status_code == 401 and reply.json()["error"] == "invalid_client"
    missing = post_form(
        http, f"{base}/revoke", {"client_id": client.client_id, "token": tokens["refresh_token"]}
    )
    assert missing.status_code == 401
    assert flow.list_tools(http, server.url, tokens["access_token"]).status_code == 200
    assert refresh_with(http, base, client, method, tokens["refresh_token"]).status_code == 200


def test_revocation_answers_200_for_unknown_or_foreign_tokens_and_400_without_one(
    server: ServerThread, runtime: Any, http: httpx2.Client
) -> None:
    base = flow.base_of(server.url)
    owner, tokens = tokens_for(http, base, make_user(runtime).key, "none")
    stranger = flow.register(http, base, auth_method="none")
    foreign = post_form(
        http, f"{base}/revoke", {"client_id": stranger.client_id, "token": tokens["access_token"]}
    )
    assert foreign.status_code == 200  # RFC 7009: says nothing about whose it is...
    assert (
        flow.list_tools(http, server.url, tokens["access_token"]).status_code == 200
    )  # ...and revokes nothing
    unknown = post_form(
        http, f"{base}/revoke", {"client_id": owner.client_id, "token": oauth.new_access_token()}
    )
    assert unknown.status_code == 200
    none = post_form(http, f"{base}/revoke", {"client_id": owner.client_id})
    assert none.status_code == 400 and none.json()["error"] == "invalid_request"
    nobody = post_form(http, f"{base}/revoke", {"token": tokens["access_token"]})
    assert nobody.status_code == 401 and nobody.json()["error"] == "invalid_client"


def test_a_basic_client_may_leave_client_id_out_of_the_token_request(
    server: ServerThread, runtime: Any, http: httpx2.Client
) -> None:
    """RFC 6749 section 2.3.1: with HTTP Basic, the header carries the client's id."""
    base = flow.base_of(server.url)
    client, tokens = tokens_for(http, base, make_user(runtime).key, "client_secret_basic")
    _, headers = client_auth(client, "client_secret_basic", id_in_body=False)
    form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    reply = post_form(http, f"{base}/token", form, headers)
    assert reply.status_code == 200, reply.text


# --- 7. the registered scope is the default ----------------------------------------------------


@pytest.mark.parametrize(
    ("registered", "key_scopes", "expected"),
    [
        ("read", ("read", "write", "delete"), "read"),
        ("read write", ("write", "delete"), "write"),  # within what the approving key has
    ],
)
def test_a_registered_scope_is_the_default_when_authorize_asks_for_none(
    server: ServerThread,
    runtime: Any,
    http: httpx2.Client,
    registered: str,
    key_scopes: tuple[str, ...],
    expected: str,
) -> None:
    base = flow.base_of(server.url)
    user = make_user(runtime, scopes=key_scopes)
    client = flow.register(http, base, scope=registered)
    pending = flow.start(http, base, client)  # no scope parameter
    page = http.get(pending.consent_url).text
    assert "<code>delete</code>" not in page  # the page shows what it will get asked for
    tokens = flow.exchange(http, base, client, flow.approve(http, base, pending, user.key), pending).json()
    assert tokens["scope"] == expected


def test_a_scope_beyond_the_registered_one_is_narrowed_to_it_or_refused(
    server: ServerThread, runtime: Any, http: httpx2.Client
) -> None:
    """MCP clients ask for every scope the server lists: a client registered for less gets what it
    registered (and the token response says so); nothing in common is an invalid_scope."""
    base = flow.base_of(server.url)
    user = make_user(runtime)
    client = approved(http, base, user.key, scope="read")
    pending = flow.start(http, base, client, scope="read write delete")
    tokens = flow.exchange(http, base, client, flow.approve(http, base, pending, user.key), pending).json()
    assert tokens["scope"] == "read"
    _, challenge = flow.pkce()
    reply = http.get(
        f"{base}/authorize", params=flow.authorize_params(client, challenge, "s", scope="delete")
    )
    assert reply.status_code == 302 and "error=invalid_scope" in reply.headers["location"]


# --- 13. the audit row names the OAuth client ---------------------------------------------------


def audit(pg: Any, user_id: str, expect: int) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + 5
    while True:
        with psycopg.connect(pg.owner_url) as conn:
            rows = conn.execute(
                "SELECT tool, outcome, oauth_client_id FROM audit_events WHERE user_id = %s ORDER BY id",
                (user_id,),
            ).fetchall()
        if len(rows) >= expect or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def test_the_audit_row_of_a_token_admitted_call_names_the_oauth_client(
    server: ServerThread, runtime: Any, http: httpx2.Client, pg: Any
) -> None:
    base = flow.base_of(server.url)
    user = make_user(runtime)
    client, tokens = flow.grant(http, base, user.key)
    assert flow.list_tools(http, server.url, tokens["access_token"]).status_code == 200
    saved = flow.call_tool(
        http, server.url, tokens["access_token"], "save_session", {"name": "a", "summary": "b"}
    )
    assert saved.status_code == 200
    assert flow.list_tools(http, server.url, user.key).status_code == 200  # the key itself: no client
    rows = audit(pg, user.id, 3)
    assert rows == [
        ("tools/list", "ok", client.client_id),
        ("save_session", "ok", client.client_id),
        ("tools/list", "ok", None),
    ]
    flat = repr(rows)
    assert tokens["access_token"] not in flat and (client.client_secret or "-") not in flat
