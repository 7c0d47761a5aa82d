"""A tool call's admission riding on the tool's own transaction (db/admission.py `Ride`,
server/admission/admitter.py): fail closed, every refusal as it was, every call counted and audited, even
one that fails, and the rate limit still exact under concurrency."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import httpx2
import psycopg
import pytest

from sessionvault.core.keys import WrappedKey
from sessionvault.db import sessions
from sessionvault.db.pool import Tenant
from sessionvault.runtime import Runtime, open_runtime
from sessionvault.server.mcp.endpoint import McpEndpoint
from sessionvault.service import accounts

from ..conftest import ServerThread, User, admin_db, make_settings, make_user

PER_MINUTE = 10


@pytest.fixture(scope="module")
def limited(pg) -> Iterator[tuple[Runtime, ServerThread]]:
    rt = open_runtime(make_settings(pg, rate_per_minute=PER_MINUTE, rate_per_day=10_000), pool_size=8)
    try:
        with ServerThread(rt) as server:
            yield rt, server
    finally:
        rt.close()


def call(server: ServerThread, key: str, tool: str, **arguments: object) -> httpx2.Response:
    params = {"name": tool, "arguments": arguments}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    return httpx2.post(server.url, content=json.dumps(body), headers=headers, timeout=30)


def result(reply: httpx2.Response) -> dict:
    assert reply.status_code == 200, reply.text
    return reply.json()["result"]


def audit_rows(who: User) -> list[dict]:
    with admin_db().tenant(who.id) as conn:
        cur = conn.execute(
            "SELECT tool, outcome, error_class FROM audit_events WHERE user_id = %s ORDER BY id", (who.id,)
        )
    return cur.fetchall()


def last_audit_row(who: User, becomes: dict) -> dict:
    """The user's newest audit row, once it is `becomes` or 10 s passed: a failed call's row is
    marked just after its answer went out."""
    deadline = time.monotonic() + 10
    while audit_rows(who)[-1] != becomes and time.monotonic() < deadline:
        time.sleep(0.05)
    return audit_rows(who)[-1]


def tool_hits(who: User) -> int:
    with admin_db().tenant(who.id) as conn:
        cur = conn.execute(
            "SELECT coalesce(sum(hits), 0) AS n FROM rate_counters"
            " WHERE user_id = %s AND budget = 'tool' AND span = 'minute'",
            (who.id,),
        )
    return int(cur.fetchone()["n"])


def known(rt: Runtime, server: ServerThread, who: User) -> User:
    """`who`, admitted once by this server (so that the next calls ride), with a saved session."""
    assert not result(call(server, who.key, "save_session", name="riding", summary="secret plan"))["isError"]
    return who


def test_a_key_revoked_after_its_last_call_gets_the_one_401_and_no_data(limited):
    rt, server = limited
    who = known(rt, server, make_user(rt))
    anonymous = call(server, "sv_live_" + "x" * 40, "load_session", name="riding")
    accounts.revoke_key(admin_db(), who.key)
    reply = call(server, who.key, "load_session", name="riding")
    assert reply.status_code == 401
    assert "secret plan" not in reply.text
    assert (reply.content, reply.headers["www-authenticate"]) == (
        anonymous.content,
        anonymous.headers["www-authenticate"],
    )


def test_a_save_with_a_key_revoked_after_its_last_call_writes_nothing(limited):
    rt, server = limited
    who = known(rt, server, make_user(rt))
    accounts.revoke_key(admin_db(), who.key)
    reply = call(server, who.key, "save_session", name="after-revoke", summary="s")
    assert reply.status_code == 401
    names = [row["name"] for row in sessions.page(admin_db(), Tenant(who.id), "", 10, None)]
    assert names == ["riding"]


def test_a_disabled_user_is_refused_on_the_riding_call(limited):
    rt, server = limited
    who = known(rt, server, make_user(rt))
    with admin_db().identity() as conn:
        conn.execute("UPDATE users SET disabled_at = now() WHERE id = %s", (who.id,))
    reply = call(server, who.key, "list_sessions")
    assert reply.status_code == 401 and "riding" not in reply.text


def test_a_refused_call_that_never_reaches_the_database_still_gets_the_401(limited):
    """Bad arguments are answered without a transaction: the held answer gives way to the 401."""
    rt, server = limited
    who = known(rt, server, make_user(rt))
    accounts.revoke_key(admin_db(), who.key)
    reply = call(server, who.key, "load_session", version="not a number")
    assert reply.status_code == 401


def test_a_rate_limited_riding_call_gets_the_429_and_its_audit_row(limited):
    rt, server = limited
    who = known(rt, server, make_user(rt))
    statuses = [call(server, who.key, "list_sessions").status_code for _ in range(PER_MINUTE)]
    assert statuses == [200] * (PER_MINUTE - 1) + [429]
    assert tool_hits(who) == PER_MINUTE
    assert audit_rows(who)[-1] == {"tool": "list_sessions", "outcome": "error", "error_class": "rate_limit"}


def test_fifty_concurrent_riding_calls_against_a_limit_of_ten_admit_exactly_ten(limited):
    rt, server = limited
    who = known(rt, server, make_user(rt))  # the first of the ten
    with ThreadPoolExecutor(max_workers=25) as pool:
        statuses = list(pool.map(lambda _: call(server, who.key, "list_sessions").status_code, range(50)))
    assert sorted(statuses) == [200] * (PER_MINUTE - 1) + [429] * (50 - PER_MINUTE + 1)
    assert tool_hits(who) == PER_MINUTE


def test_a_call_whose_transaction_fails_is_still_counted_and_audited(limited, monkeypatch):
    """The failed transaction took its admission with it: the server admits the call again in
    a flight of its own, then marks its row failed."""
    rt, server = limited
    who = known(rt, server, make_user(rt))
    before = tool_hits(who)
    monkeypatch.setattr(sessions, "_PAGE", "SELECT 1 / 0")
    answer = result(call(server, who.key, "list_sessions"))
    assert answer["isError"]
    assert tool_hits(who) == before + 1
    failed = {"tool": "list_sessions", "outcome": "error", "error_class": "db"}
    assert last_audit_row(who, becomes=failed) == failed


def test_a_call_whose_expected_principal_is_stale_is_admitted_again_and_answered(limited):
    """After a master-key rotation re-wrapped the user's data key, what the server remembers
    is stale: the riding admission lets nothing through and writes nothing, and the call is
    admitted in a flight of its own and run again."""
    rt, server = limited
    who = known(rt, server, make_user(rt))
    memory = server.server.config.app.admitter.known
    for entry, (at, principal) in list(memory._entries.items()):
        if principal.user_id == who.id:
            rewrapped = WrappedKey(principal.wrapped_dek.blob + b"~", principal.wrapped_dek.key_id)
            memory._entries[entry] = (at, replace(principal, wrapped_dek=rewrapped))
    answer = result(call(server, who.key, "list_sessions"))
    assert not answer["isError"] and "riding" in json.dumps(answer)
    assert [row["outcome"] for row in audit_rows(who)] == ["ok", "ok"]
    assert tool_hits(who) == 2


def test_a_riding_call_that_crashes_is_settled_first(limited, monkeypatch):
    """A crash inside the MCP handling (after the tool's transaction, or instead of it) is
    answered only once the admission decided: the caller's 500 and its row marked failed, or,
    for a key revoked meanwhile, the one 401."""
    rt, server = limited
    who, revoked = known(rt, server, make_user(rt)), known(rt, server, make_user(rt))
    accounts.revoke_key(admin_db(), revoked.key)

    async def broken(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(McpEndpoint, "_dispatch", broken)
    assert call(server, revoked.key, "list_sessions").status_code == 401
    assert call(server, who.key, "list_sessions").status_code == 500
    failed = {"tool": "list_sessions", "outcome": "error", "error_class": "internal"}
    assert last_audit_row(who, becomes=failed) == failed


def test_a_save_whose_expected_principal_is_stale_is_saved_all_the_same(limited):
    """The stale riding admission lets the save write nothing (not even the usage row, which
    would fail RLS and take the answer with it); the save is admitted again and made."""
    rt, server = limited
    who = make_user(rt)
    assert not result(call(server, who.key, "list_sessions"))["isError"]  # known, no usage row yet
    memory = server.server.config.app.admitter.known
    for entry, (at, principal) in list(memory._entries.items()):
        if principal.user_id == who.id:
            rewrapped = WrappedKey(principal.wrapped_dek.blob + b"~", principal.wrapped_dek.key_id)
            memory._entries[entry] = (at, replace(principal, wrapped_dek=rewrapped))
    saved = result(call(server, who.key, "save_session", name="after-rotation", summary="kept"))
    assert not saved["isError"], saved
    loaded = result(call(server, who.key, "load_session", name="after-rotation"))
    assert "kept" in json.dumps(loaded)


def test_while_rate_limited_a_call_is_refused_before_the_tool_does_any_work(limited, monkeypatch):
    rt, server = limited
    who = known(rt, server, make_user(rt))
    embedded: list[str] = []
    real = rt.vault.embedder.embed
    monkeypatch.setattr(rt.vault.embedder, "embed", lambda text: embedded.append(text) or real(text))
    for _ in range(PER_MINUTE - 1):
        assert call(server, who.key, "list_sessions").status_code == 200
    statuses = [call(server, who.key, "save_session", name="over", summary="s").status_code for _ in range(3)]
    assert statuses == [429, 429, 429]
    assert len(embedded) <= 1  # the call that found the limit reached rode; the next ones did not


def test_a_riding_call_stuck_behind_a_long_transaction_of_its_user_fails_fast(limited, pg):
    """A re-key holds the user's usage row for its whole run: a riding save (which holds the
    user's admission lock meanwhile) gives up after lock_timeout, with "try again", rather than
    waiting for the statement timeout."""
    rt, server = limited
    who = known(rt, server, make_user(rt))
    with psycopg.connect(pg.owner_url) as owner:
        owner.execute("SELECT 1 FROM user_usage WHERE user_id = %s FOR UPDATE", (who.id,))
        answer = result(call(server, who.key, "save_session", name="stuck", summary="s"))
    assert answer["isError"] and "try again" in answer["content"][0]["text"]
    assert "took too long" not in answer["content"][0]["text"]


def test_the_http_api_rides_too_and_refuses_a_key_revoked_meanwhile(limited):
    rt, server = limited
    who = known(rt, server, make_user(rt))
    api = server.url.removesuffix("/mcp") + "/api/v1/sessions"
    headers = {"Authorization": f"Bearer {who.key}"}
    assert "riding" in httpx2.get(api, headers=headers, timeout=30).text
    accounts.revoke_key(admin_db(), who.key)
    refused = httpx2.get(api, headers=headers, timeout=30)
    assert refused.status_code == 401 and "riding" not in refused.text


def test_a_key_narrowed_to_read_cannot_claim_a_handoff_on_the_cached_path(limited, pg):
    """The review's finding (issue 27, item 6): a claim needs write as well as read; the
    statement that admits a riding call checks every scope the call needs, so a key whose write
    scope was taken away after its last call claims nothing."""
    rt, server = limited
    who = make_user(rt)
    result(
        call(server, who.key, "save_session", name="offer", summary="s", repo="github.com/o/r", handoff=True)
    )
    assert not result(call(server, who.key, "list_sessions"))["isError"]  # the instance knows the key now
    with psycopg.connect(pg.owner_url, autocommit=True) as owner:
        owner.execute("UPDATE api_keys SET scopes = '{read}' WHERE user_id = %s", (who.id,))
    claim = result(call(server, who.key, "load_session", repo="github.com/o/r", accept=True))
    assert claim["isError"] is True and "write" in claim["content"][0]["text"]
    offered = result(call(server, who.key, "load_session", repo="github.com/o/r"))
    assert offered["structuredContent"]["handoff"]["state"] == "open"  # nobody claimed it


@pytest.mark.parametrize("arguments", [{"accept": True, "name": "x"}, {"accept": True, "max_tokens": -1}])
def test_a_claim_that_never_reaches_its_transaction_is_admitted_and_counted_once(limited, arguments):
    """Found by review: a load_session with accept needs "read,write", a scope string that was
    looked up whole among the key's scopes. A claim that fails before its transaction carried
    the admission was admitted in a flight of its own, then taken for stale and run and counted
    a second time."""
    rt, server = limited
    who = known(rt, server, make_user(rt))
    hits, rows = tool_hits(who), len(audit_rows(who))
    reply = call(server, who.key, "load_session", **arguments)
    assert reply.status_code == 200
    assert tool_hits(who) == hits + 1
    assert len(audit_rows(who)) == rows + 1
