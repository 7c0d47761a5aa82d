"""Attacks on the OAuth authorization server and the token check, over real HTTP against a real
server and database: redirect URIs that almost match, PKCE left out or wrong, codes and
refresh tokens replayed, tokens for another resource or past their hour, scopes beyond the
approving key, forged CSRF, framing, revoked keys, and the identical 401."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx2
import psycopg
import pytest

from sessionvault.core import oauth
from sessionvault.db import oauth as store
from sessionvault.db.pool import Database
from sessionvault.jobs import maintenance
from sessionvault.runtime import Runtime, open_runtime
from sessionvault.service import accounts

from ..conftest import ServerThread, admin_db, make_settings, make_user
from ..support import oauth as flow

CLAUDE_CALLBACK = "https://claude.ai/api/mcp/auth_callback"


@pytest.fixture(scope="module")
def served(runtime: Runtime) -> Iterator[ServerThread]:
    with ServerThread(runtime) as s:
        yield s


@pytest.fixture
def base(served: ServerThread) -> str:
    return flow.base_of(served.url)


def as_owner(pg: Any, statement: str, *params: Any) -> None:
    """Tamper with a row as the database owner (a superuser here): what an attacker cannot."""
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:
        conn.execute(statement, params)


def unauthorized(reply: httpx2.Response, base: str) -> bool:
    return (
        reply.status_code == 401
        and reply.content == b'{"error": "unauthorized"}'
        and reply.headers["www-authenticate"] == oauth.www_authenticate(base)
    )


# --- redirect URIs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "near_miss",
    [
        "http://127.0.0.1:33418/callback/",  # trailing slash
        "http://127.0.0.1:33419/callback",  # other port
        "http://127.0.0.1:33418/callbacks",  # other path
        "http://127.0.0.1:33418/callback?x=1",  # extra query
        "http://localhost:33418/callback",  # same machine, other name
        "https://attacker.example/callback",  # unregistered
    ],
)
def test_an_unregistered_or_near_miss_redirect_uri_gets_no_redirect_and_no_request(http, base, near_miss):
    client = flow.register(http, base)
    _, challenge = flow.pkce()
    params = flow.authorize_params(client, challenge, "s", redirect_uri=near_miss)
    reply = http.get(f"{base}/authorize", params=params)
    assert reply.status_code == 400 and "location" not in reply.headers
    assert reply.headers["content-type"].startswith("text/html") and "invalid_request" in reply.text


@pytest.mark.parametrize(
    "uri",
    [
        "http://attacker.example/callback",  # http off loopback
        "http://192.168.1.10/callback",
        "javascript:alert(1)",
        "https://user:pw@example.com/cb",
        "https://example.com/cb#fragment",
    ],
)
def test_registration_refuses_redirect_uris_that_are_not_https_or_loopback_http(http, base, uri):
    reply = http.post(f"{base}/register", json={"redirect_uris": [uri], "client_name": "x"})
    assert reply.status_code == 400
    assert reply.json()["error"] in ("invalid_redirect_uri", "invalid_client_metadata")


def test_the_claude_ai_callback_registers_and_receives_the_code(http, base, runtime):
    user = make_user(runtime)
    client = flow.register(http, base, (CLAUDE_CALLBACK,), name="Claude")
    pending = flow.start(http, base, client)
    reply = flow.decide(http, base, pending, user.key)
    assert reply.status_code == 303 and reply.headers["location"].startswith(CLAUDE_CALLBACK + "?code=")
    code = flow.redirect_params(reply)["code"]
    assert flow.exchange(http, base, client, code, pending).status_code == 200


# --- PKCE ------------------------------------------------------------------------------------


def test_a_missing_or_wrong_pkce_verifier_gets_no_token(http, base, runtime):
    user = make_user(runtime)
    client = flow.register(http, base)
    pending = flow.start(http, base, client)
    code = flow.approve(http, base, pending, user.key)
    missing = flow.token_request(
        http, base, client, grant_type="authorization_code", code=code, redirect_uri=pending.redirect_uri
    )
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
    wrong = flow.exchange(http, base, client, code, pending, code_verifier=flow.pkce()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"


def test_the_database_checks_the_pkce_verifier_itself(runtime):
    """Even a caller that skipped the SDK's check cannot mint with a wrong verifier."""
    user = make_user(runtime)
    rid, code = oauth.new_request_id(), oauth.new_code()
    verifier, challenge = flow.pkce()
    client = store.Client(f"c-{rid[:12]}", None, {"redirect_uris": [flow.CALLBACK]})
    assert store.register(runtime.db, client, (10_000, 10_000), None) == "ok"
    request = store.Pending(rid, client.client_id, flow.CALLBACK, "s", challenge, (), "http://x/mcp")
    assert store.begin(runtime.db, request, 50)
    assert store.approve(runtime.db, rid, oauth.digest(user.key), oauth.digest(code)).status == "ok"
    args = {
        "client_id": client.client_id,
        "redirect_uri": flow.CALLBACK,
        "resource": "http://x/mcp",
        "pair": store.Pair(
            oauth.digest(oauth.new_access_token()), oauth.digest(oauth.new_refresh_token()), 60, 60
        ),
    }
    assert not store.exchange(runtime.db, oauth.digest(code), verifier=flow.pkce()[0], **args).ok
    assert not store.exchange(runtime.db, oauth.digest(code), verifier="", **args).ok
    assert not store.exchange(
        runtime.db, oauth.digest(code), verifier=verifier, **{**args, "resource": "y"}
    ).ok
    assert store.exchange(runtime.db, oauth.digest(code), verifier=verifier, **args).ok  # only that was wrong


def test_the_plain_pkce_method_is_refused(http, base, runtime):
    client = flow.register(http, base)
    verifier, _ = flow.pkce()
    params = flow.authorize_params(client, verifier, "s", code_challenge_method="plain")
    reply = http.get(f"{base}/authorize", params=params)
    # No user approved this client yet: our error page, no redirect (test_oauth_review2.py).
    assert reply.status_code == 400 and "location" not in reply.headers and "invalid_request" in reply.text
    flow.approve(http, base, flow.start(http, base, client), make_user(runtime).key)
    reply = http.get(f"{base}/authorize", params=params)
    assert reply.status_code == 302
    location = reply.headers["location"]
    assert location.startswith(flow.CALLBACK) and "error=invalid_request" in location
    assert "/consent" not in location


# --- replays ---------------------------------------------------------------------------------


def test_a_code_used_twice_is_refused_and_revokes_the_tokens_of_its_first_use(http, base, served, runtime):
    user = make_user(runtime)
    client = flow.register(http, base)
    pending = flow.start(http, base, client)
    code = flow.approve(http, base, pending, user.key)
    first = flow.exchange(http, base, client, code, pending).json()
    assert flow.list_tools(http, served.url, first["access_token"]).status_code == 200
    again = flow.exchange(http, base, client, code, pending)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert unauthorized(flow.list_tools(http, served.url, first["access_token"]), base)
    assert flow.refresh(http, base, client, first["refresh_token"]).status_code == 400


def test_a_refresh_token_used_twice_revokes_its_whole_family(http, base, served, runtime):
    user = make_user(runtime)
    client, first = flow.grant(http, base, user.key)
    second = flow.refresh(http, base, client, first["refresh_token"]).json()
    assert flow.list_tools(http, served.url, second["access_token"]).status_code == 200
    replayed = flow.refresh(http, base, client, first["refresh_token"])
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
    # everything of that family is dead: the current access token and the current refresh token
    assert unauthorized(flow.list_tools(http, served.url, second["access_token"]), base)
    assert flow.refresh(http, base, client, second["refresh_token"]).status_code == 400


def test_a_refresh_token_is_bound_to_its_client(http, base, runtime):
    user = make_user(runtime)
    _, tokens = flow.grant(http, base, user.key)
    thief = flow.register(http, base)
    assert flow.refresh(http, base, thief, tokens["refresh_token"]).status_code == 400


# --- resource, expiry, scope -----------------------------------------------------------------


def test_tokens_for_another_resource_are_refused_at_authorize_token_and_mcp(http, base, served, runtime, pg):
    user = make_user(runtime)
    client = flow.register(http, base)
    _, challenge = flow.pkce()
    other = "https://other.example/mcp"
    params = flow.authorize_params(client, challenge, "s", resource=other)
    refused = http.get(f"{base}/authorize", params=params)
    assert refused.status_code == 400 and "invalid_target" in refused.text  # not approved: no redirect

    pending = flow.start(http, base, client, resource=served.url)  # ours, named explicitly
    code = flow.approve(http, base, pending, user.key)
    wrong = flow.exchange(http, base, client, code, pending, resource=other)
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_target"
    tokens = flow.exchange(http, base, client, code, pending, resource=served.url).json()
    assert flow.list_tools(http, served.url, tokens["access_token"]).status_code == 200
    as_owner(
        pg,
        "UPDATE oauth_tokens SET resource = %s WHERE token_hash = %s",
        other,
        oauth.digest(tokens["access_token"]),
    )
    assert unauthorized(flow.list_tools(http, served.url, tokens["access_token"]), base)


def test_an_expired_access_token_is_refused(http, base, served, runtime, pg):
    user = make_user(runtime)
    _, tokens = flow.grant(http, base, user.key)
    as_owner(
        pg,
        "UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = %s",
        oauth.digest(tokens["access_token"]),
    )
    assert unauthorized(flow.list_tools(http, served.url, tokens["access_token"]), base)


def test_an_access_token_lives_an_hour_and_a_code_ten_minutes(http, base, runtime, pg):
    user = make_user(runtime)
    client = flow.register(http, base)
    pending = flow.start(http, base, client)
    code = flow.approve(http, base, pending, user.key)
    with psycopg.connect(pg.owner_url) as conn:
        code_life = conn.execute(
            "SELECT extract(epoch FROM expires_at - now()) FROM oauth_codes WHERE code_hash = %s",
            (oauth.digest(code),),
        ).fetchone()[0]  # type: ignore[index]
        tokens = flow.exchange(http, base, client, code, pending).json()
        token_life = conn.execute(
            "SELECT extract(epoch FROM expires_at - now()) FROM oauth_tokens WHERE token_hash = %s",
            (oauth.digest(tokens["access_token"]),),
        ).fetchone()[0]  # type: ignore[index]
    assert 590 <= code_life <= 601 and 3590 <= token_life <= 3601 and tokens["expires_in"] == 3600


def test_a_token_never_carries_more_than_the_approving_key(http, base, served, runtime):
    reader = make_user(runtime, scopes=("read",))
    client = flow.register(http, base)
    pending = flow.start(http, base, client, scope="read write delete")
    tokens = flow.exchange(http, base, client, flow.approve(http, base, pending, reader.key), pending).json()
    assert tokens["scope"] == "read"
    listed = flow.list_tools(http, served.url, tokens["access_token"]).json()
    assert {t["name"] for t in listed["result"]["tools"]} == {
        "load_session",
        "search_sessions",
        "list_sessions",
    }
    saved = flow.call_tool(
        http, served.url, tokens["access_token"], "save_session", {"name": "x", "summary": "y"}
    )
    assert saved.json()["result"]["isError"]
    wider = flow.refresh(http, base, client, tokens["refresh_token"], scope="read write")
    assert wider.status_code == 400 and wider.json()["error"] == "invalid_scope"


def test_a_request_for_a_scope_the_key_lacks_entirely_gets_an_error_not_a_code(http, base, runtime):
    reader = make_user(runtime, scopes=("read",))
    client = flow.register(http, base)
    pending = flow.start(http, base, client, scope="delete")
    params = flow.redirect_params(flow.decide(http, base, pending, reader.key))
    assert params == {"error": "invalid_scope", "state": pending.state, "iss": base}


# --- the consent page ------------------------------------------------------------------------


def test_a_forged_csrf_value_is_a_400_and_approves_nothing(http, base, runtime):
    user = make_user(runtime)
    client = flow.register(http, base)
    pending = flow.start(http, base, client)
    other = flow.start(http, base, client)
    forged = flow.decide(http, base, pending, user.key, csrf="A" * 43)
    assert forged.status_code == 400 and "location" not in forged.headers
    borrowed = flow.csrf_of(http.get(other.consent_url).text)  # valid, for another request
    assert flow.decide(http, base, pending, user.key, csrf=borrowed).status_code == 400
    assert flow.approve(http, base, pending, user.key)  # the request itself is still open


def test_a_post_from_another_origin_is_refused(http, base, runtime):
    user = make_user(runtime)
    pending = flow.start(http, base, flow.register(http, base))
    page = http.get(pending.consent_url).text
    form = {
        "request": pending.request_id,
        "csrf": flow.csrf_of(page),
        "api_key": user.key,
        "decision": "approve",
    }
    reply = http.post(f"{base}/consent", data=form, headers={"Origin": "https://attacker.example"})
    assert reply.status_code == 403


def test_the_consent_page_cannot_be_framed_cached_or_leak_a_referrer(http, base):
    pending = flow.start(http, base, flow.register(http, base, name="<script>alert(1)</script>"))
    page = http.get(pending.consent_url)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    # The form may go to this site, and the redirect after it to the client's registered origin only.
    callback = urlsplit(flow.CALLBACK)
    assert page.headers["content-security-policy"] == (
        f"default-src 'none'; style-src 'unsafe-inline'; form-action 'self' {callback.scheme}://{callback.netloc};"
        " frame-ancestors 'none'; base-uri 'none'"
    )
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "same-origin"  # the request id stays on this site
    assert "<script>" not in page.text and "&lt;script&gt;" in page.text  # the name is escaped
    assert '<form method="post" action="/consent">' in page.text
    assert '<input type="password" id="api_key" name="api_key"' in page.text


def test_a_bad_key_shows_the_page_again_with_one_generic_line_and_is_counted(http, base, runtime, pg):
    def counted() -> int:
        with psycopg.connect(pg.owner_url) as conn:
            return int(
                conn.execute(
                    "SELECT coalesce(sum(hits), 0) FROM auth_failures WHERE reason = 'consent_unknown_key'"
                ).fetchone()[0]  # type: ignore[index]
            )

    pending = flow.start(http, base, flow.register(http, base))
    before = counted()
    for key in ("sv_live_" + "x" * 32, "not a key at all"):
        reply = flow.decide(http, base, pending, key)
        assert reply.status_code == 200 and "That key was not accepted." in reply.text
        assert key not in reply.text
    assert counted() == before + 2  # the tests run one at a time: nothing else adds


def test_a_request_is_decided_once_and_deny_sends_access_denied(http, base, runtime):
    user = make_user(runtime)
    client = flow.register(http, base)
    pending = flow.start(http, base, client)
    flow.approve(http, base, pending, user.key)
    page = http.get(pending.consent_url)
    assert page.status_code == 400  # gone once approved
    denied = flow.start(http, base, client)
    params = flow.redirect_params(flow.decide(http, base, denied, "", decision="deny"))
    assert params == {"error": "access_denied", "state": denied.state, "iss": base}  # RFC 9207
    assert http.get(f"{base}/consent", params={"request": "no-such-request"}).status_code == 400


# --- revocation and the identical 401 --------------------------------------------------------


def test_revoking_the_approving_key_kills_its_tokens(http, base, served, runtime):
    user = make_user(runtime)
    client, tokens = flow.grant(http, base, user.key)
    accounts.revoke_key(admin_db(), user.key)
    assert unauthorized(flow.list_tools(http, served.url, tokens["access_token"]), base)
    assert flow.refresh(http, base, client, tokens["refresh_token"]).status_code == 400


def test_the_revocation_endpoint_revokes_the_family(http, base, served, runtime):
    user = make_user(runtime)
    client, tokens = flow.grant(http, base, user.key)
    form = {
        "token": tokens["access_token"],
        "client_id": client.client_id,
        "client_secret": client.client_secret,
    }
    assert http.post(f"{base}/revoke", data=form).status_code == 200
    assert unauthorized(flow.list_tools(http, served.url, tokens["access_token"]), base)
    assert flow.refresh(http, base, client, tokens["refresh_token"]).status_code == 400


def test_another_client_cannot_revoke_or_use_a_wrong_secret(http, base, served, runtime):
    user = make_user(runtime)
    client, tokens = flow.grant(http, base, user.key)
    stranger = flow.register(http, base)
    form = {
        "token": tokens["access_token"],
        "client_id": stranger.client_id,
        "client_secret": stranger.client_secret,
    }
    assert http.post(f"{base}/revoke", data=form).status_code == 200  # RFC 7009: says nothing
    assert flow.list_tools(http, served.url, tokens["access_token"]).status_code == 200
    bad_secret = flow.Registered(client.client_id, "wrong", client.redirect_uri, client.info)
    assert flow.refresh(http, base, bad_secret, tokens["refresh_token"]).status_code == 401


def test_every_refused_token_gets_the_same_401_as_a_refused_key(http, base, served, runtime, pg):
    user = make_user(runtime)
    tokens = [flow.grant(http, base, user.key)[1]["access_token"] for _ in range(3)]
    as_owner(pg, "UPDATE oauth_tokens SET expires_at = now() WHERE token_hash = %s", oauth.digest(tokens[0]))
    as_owner(pg, "UPDATE oauth_tokens SET revoked_at = now() WHERE token_hash = %s", oauth.digest(tokens[1]))
    as_owner(pg, "UPDATE oauth_tokens SET resource = 'x' WHERE token_hash = %s", oauth.digest(tokens[2]))
    revoked = make_user(runtime)
    revoked_token = flow.grant(http, base, revoked.key)[1]["access_token"]
    accounts.revoke_key(admin_db(), revoked.key)
    bearers = [*tokens, revoked_token, oauth.new_access_token(), "sv_at_short", "sv_live_" + "A" * 32, ""]
    replies = [flow.list_tools(http, served.url, b) for b in bearers]
    shapes = {(r.status_code, r.content, r.headers["www-authenticate"]) for r in replies}
    assert shapes == {(401, b'{"error": "unauthorized"}', oauth.www_authenticate(base))}


# --- what the serving role can and cannot do; what open registration can grow --------------


def test_the_serving_role_cannot_read_or_mint_codes_and_tokens(pg):
    db = Database(pg.app_url, max_size=1)
    forbidden = [
        "SELECT * FROM oauth_tokens",
        "SELECT * FROM oauth_codes",
        "INSERT INTO oauth_clients (client_id, info) VALUES ('x', '{}')",
        "UPDATE oauth_requests SET used_at = NULL",
        "SELECT sessionvault_oauth_mint(gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'c',"
        " '{read}', 'r', '\\x00', '\\x01', 60, 60)",
        "SELECT sessionvault_oauth_revoke_family(gen_random_uuid())",
        "SELECT sessionvault_oauth_prune()",
    ]
    try:
        for statement in forbidden:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                db.first_use(lambda conn, s=statement: conn.execute(s))  # type: ignore[misc]
    finally:
        db.close()


def test_registrations_are_capped_per_hour_server_wide(pg, http):
    with psycopg.connect(pg.owner_url) as conn:
        recent = conn.execute(
            "SELECT count(*) FROM oauth_clients WHERE created_at > now() - interval '1 hour'"
        ).fetchone()[0]  # type: ignore[index]
    rt = open_runtime(make_settings(pg, oauth_registrations_per_hour=recent + 2), pool_size=1)
    try:
        with ServerThread(rt) as s:
            base = flow.base_of(s.url)
            flow.register(http, base)
            flow.register(http, base)
            third = http.post(f"{base}/register", json={"redirect_uris": [flow.CALLBACK]})
    finally:
        rt.close()
    assert third.status_code == 400 and "too many registrations" in third.text


def test_one_address_cannot_use_up_the_registrations_everyone_needs(pg):
    """Per address first, then server-wide: a caller who registered its hour's share is refused
    while a connector registering from elsewhere still gets in."""
    db = Database(pg.app_url, max_size=1)
    one, other = oauth.digest("203.0.113.7"), oauth.digest("198.51.100.9")

    def register(address: bytes) -> str:
        client = store.Client("c-" + oauth.new_request_id()[:20], None, {"redirect_uris": [flow.CALLBACK]})
        return store.register(db, client, (10_000, 3), address)

    try:
        assert [register(one) for _ in range(4)] == ["ok", "ok", "ok", "address_cap"]
        assert register(other) == "ok"
    finally:
        db.close()


def test_the_prune_task_drops_unused_clients_and_expired_requests(http, base, pg):
    stale = flow.register(http, base)
    kept = flow.register(http, base)
    flow.start(http, base, kept)
    as_owner(
        pg,
        "UPDATE oauth_clients SET created_at = now() - interval '25 hours' WHERE client_id = %s",
        stale.client_id,
    )
    as_owner(
        pg,
        "UPDATE oauth_requests SET expires_at = now() - interval '1 second' WHERE client_id = %s",
        kept.client_id,
    )
    rt = open_runtime(make_settings(pg, database_url=pg.maint_url), pool_size=1)
    try:
        pruned = maintenance.run(rt, "prune_oauth")
    finally:
        rt.close()
    assert pruned["clients"] >= 1 and pruned["requests"] >= 1  # other tests' rows may count too
    with psycopg.connect(pg.owner_url) as conn:
        count = "SELECT count(*) FROM oauth_clients WHERE client_id = %s"
        gone = conn.execute(count, (stale.client_id,)).fetchone()
        left = conn.execute(count, (kept.client_id,)).fetchone()
    assert gone == (0,) and left == (1,)
