"""An outside review's attacks on the OAuth authorization server, over real HTTP against a real
server and database. Each test here failed before its fix."""

from __future__ import annotations

import httpx2
import psycopg
import pytest

from ..conftest import ServerThread
from ..support import oauth as flow


def pending_rows(pg, client_id: str) -> list[tuple[int, int]]:
    with psycopg.connect(pg.owner_url) as conn:
        return conn.execute(
            "SELECT coalesce(length(state), 0), length(code_challenge) FROM oauth_requests"
            " WHERE client_id = %s",
            (client_id,),
        ).fetchall()


@pytest.mark.parametrize(
    "oversized",
    [
        {"state": "s" * 60_000},  # 50 of these per client, 100 clients an hour: gigabytes
        {"code_challenge": "c" * 60_000},
        {"code_challenge": "not-an-s256-challenge"},  # S256 is always 43 base64url characters
    ],
)
def test_an_anonymous_authorize_request_cannot_store_an_oversized_pending_row(
    server: ServerThread, pg, http: httpx2.Client, oversized: dict[str, str]
) -> None:
    base = flow.base_of(server.url)
    client = flow.register(http, base)
    _, challenge = flow.pkce()
    params = {**flow.authorize_params(client, challenge, "s"), **oversized}
    reply = http.post(f"{base}/authorize", data=params)  # a form body: up to 64 KiB
    assert reply.status_code in (302, 400)
    assert "/consent?request=" not in reply.headers.get("location", "")
    assert pending_rows(pg, client.client_id) == []


def test_an_ordinary_state_and_s256_challenge_still_start_a_request(
    server: ServerThread, pg, http: httpx2.Client
) -> None:
    base = flow.base_of(server.url)
    client = flow.register(http, base)
    pending = flow.start(http, base, client)
    assert pending.request_id
    assert pending_rows(pg, client.client_id) == [(len(pending.state), 43)]


@pytest.mark.parametrize(
    "uri",
    [
        "https://a.example;frame-ancestors/cb",  # went verbatim into the page's CSP
        "https://a.example,b/cb",  # a comma splits a CSP header into two policies
        "https://a'b.example/cb",
    ],
)
def test_a_redirect_host_that_no_dns_name_has_cannot_be_registered(
    server: ServerThread, http: httpx2.Client, uri: str
) -> None:
    body = {"redirect_uris": [uri], "client_name": "x"}
    reply = http.post(f"{flow.base_of(server.url)}/register", json=body)
    assert reply.status_code == 400
    assert reply.json()["error"] == "invalid_redirect_uri"
