"""End to end: the official MCP Python client over real HTTP against the running app."""

import json
import os
import time

import httpx2
import psycopg
import pytest
from mcp.shared.exceptions import MCPError
from psycopg.rows import dict_row

from sessionvault.db import identity
from sessionvault.db.audit import salted_hash
from sessionvault.service import accounts

from ..conftest import ServerThread, admin_db, make_settings, make_user, mcp_client
from ..support.logs import catch_logs

pytestmark = pytest.mark.anyio


async def call(client, tool, args):
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def test_a_handoff_from_one_client_to_another(local_server, local_runtime):
    user = make_user(local_runtime)
    repo = "github.com/acme/shop"
    async with mcp_client(local_server.url, user.key) as planner:
        saved = await call(
            planner,
            "save_session",
            {
                "name": "checkout-refactor",
                "repo": repo,
                "summary": "Split checkout into cart, payment and receipt services",
                "plan": ["extract cart", "extract payment"],
                "decisions": [{"decision": "use Stripe intents", "reason": "SCA compliance"}],
                "todos": ["write payment tests"],
                "files": ["src/checkout.py"],
                "errors": ["TypeError in receipt totals"],
                "tried": ["caching totals: stale prices"],
                "client": "claude-code",
            },
        )
        assert saved["version"] == 1 and saved["embedded"] is True
        await call(
            planner, "save_session", {"name": "search-index", "repo": repo, "summary": "Elastic index"}
        )
        await call(planner, "save_session", {"name": "checkout-refactor", "repo": repo, "summary": "v2"})

    async with mcp_client(local_server.url, user.key) as coder:  # a second, independent client
        latest = await call(coder, "load_session", {"repo": repo})
        assert (latest["name"], latest["summary"], latest["version"]) == ("checkout-refactor", "v2", 2)
        first = await call(coder, "load_session", {"name": "checkout-refactor", "version": 1})
        assert first["decisions"] == [{"decision": "use Stripe intents", "reason": "SCA compliance"}]
        assert first["tried"] == ["caching totals: stale prices"] and first["client"] == "claude-code"
        brief = await call(coder, "load_session", {"name": "checkout-refactor", "mode": "brief"})
        assert set(brief) >= {"summary", "version"} and "plan" not in brief
        full = await call(coder, "load_session", {"name": "checkout-refactor", "mode": "full"})
        assert [r["name"] for r in full["related"]] == ["search-index"]  # others only, never itself
        missing = await call(coder, "load_session", {"name": "checkout"})
        assert missing["found"] is False

        listed = await call(coder, "list_sessions", {"repo": repo})
        assert [s["name"] for s in listed["sessions"]] == ["checkout-refactor", "search-index"]
        found = await call(coder, "search_sessions", {"query": "payment service split", "max_results": 1})
        assert [r["name"] for r in found["results"]] == ["checkout-refactor"]

        deleted = await call(coder, "delete_session", {"name": "checkout-refactor"})
        assert deleted["versions_deleted"] == 2
        assert (await call(coder, "load_session", {"name": "checkout-refactor"}))["found"] is False


async def test_tools_list_is_small_and_portable(server, user):
    async with mcp_client(server.url, user.key) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == [
        "save_session",
        "load_session",
        "search_sessions",
        "list_sessions",
        "delete_session",
        "delete_all_sessions",
    ]
    text = json.dumps([t.model_dump(by_alias=True, exclude_none=True) for t in tools])
    assert len(text) / 4 < 2500  # tokens estimated as characters / 4
    for tool in tools:
        assert tool.input_schema["type"] == "object"
        assert not {"anyOf", "oneOf", "allOf", "$ref", "$defs"} & set(tool.input_schema)
        assert tool.annotations is not None
    by_name = {t.name: t for t in tools}
    assert by_name["delete_session"].annotations.destructive_hint is True
    assert by_name["load_session"].annotations.read_only_hint is True


async def test_two_users_cannot_see_each_other_through_the_tools(local_server, local_runtime):
    alice, bob = make_user(local_runtime), make_user(local_runtime)
    async with mcp_client(local_server.url, alice.key) as a:
        await call(a, "save_session", {"name": "alice-only", "repo": "r", "summary": "kubernetes rollout"})
    async with mcp_client(local_server.url, bob.key) as b:
        assert (await call(b, "load_session", {"name": "alice-only"}))["found"] is False
        assert (await call(b, "load_session", {"repo": "r"}))["found"] is False
        assert (await call(b, "list_sessions", {}))["sessions"] == []
        assert (await call(b, "search_sessions", {"query": "kubernetes rollout"}))["results"] == []
        assert (await call(b, "delete_session", {"name": "alice-only"}))["found"] is False
        # No argument can name another user: unknown fields are refused, not ignored.
        sneaky = await b.call_tool("load_session", {"name": "alice-only", "user_id": alice.id})
        assert sneaky.is_error and "user_id" in sneaky.content[0].text
    async with mcp_client(local_server.url, alice.key) as a:
        assert (await call(a, "load_session", {"name": "alice-only"}))["found"] is True


async def test_validation_errors_name_the_field(server, user):
    async with mcp_client(server.url, user.key) as client:
        # A NUL is refused at the edge (text the database cannot hold): a JSON-RPC error naming it.
        with pytest.raises(MCPError) as nul:
            await client.call_tool("save_session", {"name": "x", "summary": "a\x00b"})
        assert nul.value.code == -32602 and "NUL" in nul.value.message
        assert nul.value.message.endswith("in params.arguments.summary")
        result = await client.call_tool("save_session", {"name": "x", "summary": "s", "plan": ["p"] * 201})
        assert result.is_error and "plan" in result.content[0].text


def raw_post(url, body, key=None, **headers):
    if key:
        headers["Authorization"] = f"Bearer {key}"
    headers.setdefault("Content-Type", "application/json")
    headers.setdefault("Accept", "application/json, text/event-stream")
    return httpx2.post(url, content=body, headers=headers, timeout=30)


LIST_TOOLS = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
LIST_SESSIONS = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_sessions", "arguments": {}}}
).encode()


def audit_rows(url: str, sql: str, *params, expect: int, settled=lambda rows: True) -> list:
    """Admission writes the row before the tool runs; a call that then fails marks it just
    after the response is sent: wait briefly for the rows (and for them to be `settled`)."""
    deadline = time.monotonic() + 5
    while True:
        with psycopg.connect(url, row_factory=dict_row) as conn:
            rows = conn.execute(sql, params).fetchall()
        if (len(rows) >= expect and settled(rows)) or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def test_every_auth_failure_is_byte_identical(server, runtime, pg):
    revoked, disabled = make_user(runtime), make_user(runtime)
    accounts.revoke_key(admin_db(), revoked.key)
    identity.disable_user(admin_db(), disabled.id)
    unknown = "sv_live_" + "A" * 32
    agent = {"User-Agent": f"auth-test/{os.urandom(4).hex()}"}  # would mark this test's audit rows
    ids = [f"auth-{os.urandom(4).hex()}" for _ in range(5)]
    with catch_logs() as logs:
        responses = [
            raw_post(server.url, LIST_TOOLS, unknown, **agent, **{"X-Request-ID": ids[0]}),
            raw_post(server.url, LIST_TOOLS, revoked.key, **agent, **{"X-Request-ID": ids[1]}),
            raw_post(server.url, LIST_TOOLS, disabled.key, **agent, **{"X-Request-ID": ids[2]}),
            raw_post(server.url, LIST_TOOLS, **agent, **{"X-Request-ID": ids[3]}),
            raw_post(
                server.url,
                LIST_TOOLS,
                Authorization="Basic dXNlcjpwYXNz",
                **agent,
                **{"X-Request-ID": ids[4]},
            ),
        ]
        logged = logs.requests_until(lambda lines: {x.get("correlation_id") for x in lines} >= set(ids))
    shapes = {(r.status_code, r.content, r.headers["www-authenticate"]) for r in responses}
    metadata = server.url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp"
    assert shapes == {(401, b'{"error": "unauthorized"}', f'Bearer resource_metadata="{metadata}"')}
    # The reason stays server-side: in the log line (and a counter), never one stored row each.
    lines = {x["correlation_id"]: x for x in logged if x.get("correlation_id") in ids}
    assert [lines[i]["auth_reason"] for i in ids] == [
        "unknown_key",
        "revoked_key",
        "disabled_user",
        "missing",
        "missing",
    ]
    assert {(x["tool"], x["status"], x["outcome"], x["error_class"]) for x in lines.values()} == {
        ("tools/list", 401, "error", "auth")
    }
    marker = salted_hash(agent["User-Agent"], runtime.settings.audit_salt)
    with psycopg.connect(pg.owner_url) as conn:
        stored = conn.execute("SELECT count(*) FROM audit_events WHERE ua_hash = %s", (marker,)).fetchone()
    assert stored == (0,)
    with psycopg.connect(pg.admin_url) as conn:  # with no tenant, no tenant's rows
        assert conn.execute("SELECT count(*) FROM audit_events WHERE user_id IS NOT NULL").fetchone() == (0,)


def test_body_cap_malformed_json_and_methods(server, user):
    too_big = raw_post(server.url, b'{"x": "' + b"a" * 1_048_577 + b'"}', user.key)
    assert too_big.status_code == 413
    assert raw_post(server.url, b"{not json", user.key).status_code == 400
    assert httpx2.get(server.url, headers={"Authorization": f"Bearer {user.key}"}).status_code == 405
    # Without a credential, any method gets the same 401 challenge as a POST (RFC 9728 discovery).
    challenge = raw_post(server.url, LIST_TOOLS)
    for probe in (httpx2.get(server.url), httpx2.head(server.url)):
        assert probe.status_code == 401
        assert probe.headers["www-authenticate"] == challenge.headers["www-authenticate"]
    assert httpx2.get(server.url.replace("/mcp", "/health")).json() == {"ok": True}


def test_rate_limited_requests_get_429_with_retry_after(pg):
    from sessionvault.runtime import open_runtime

    rt = open_runtime(make_settings(pg, rate_per_minute=2))
    user = make_user(rt)
    try:
        with ServerThread(rt) as s:
            statuses = [raw_post(s.url, LIST_SESSIONS, user.key) for _ in range(3)]
            handshake = [raw_post(s.url, LIST_TOOLS, user.key) for _ in range(5)]
    finally:
        rt.close()
    assert [r.status_code for r in statuses] == [200, 200, 429]
    # protocol messages have their own budget: a client's start-up never eats its tool calls
    assert [r.status_code for r in handshake] == [200] * 5
    limited = statuses[-1]
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert limited.json()["window"] == "minute" and limited.json()["limit"] == 2


def test_each_request_leaves_one_audit_row_without_pii(server, runtime, pg):
    user = make_user(runtime)
    raw_post(server.url, LIST_TOOLS, user.key, **{"User-Agent": "secret-agent/1.0"})
    bad = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "save_session", "arguments": {"name": "x", "summary": "q" * 5000}},
        }
    ).encode()
    raw_post(server.url, bad, user.key)
    rows = audit_rows(
        pg.owner_url,
        "SELECT * FROM audit_events WHERE user_id = %s ORDER BY id",
        user.id,
        expect=2,
        settled=lambda rows: rows[-1]["outcome"] == "error",
    )
    assert [(r["tool"], r["outcome"], r["error_class"]) for r in rows] == [
        ("tools/list", "ok", None),
        ("save_session", "error", "validation"),
    ]
    row = rows[0]
    assert len(row["ip_hash"]) == 32 and len(row["ua_hash"]) == 32
    flat = repr(rows)
    assert "secret-agent" not in flat and "127.0.0.1" not in flat and user.key not in flat


async def test_prompts_and_instructions_for_handoffs(server, user):
    async with mcp_client(server.url, user.key) as client:
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        resume = await client.get_prompt("resume", {"repo": "github.com/acme/shop"})
        handoff = await client.get_prompt("handoff", {"name": "auth-jwt"})
        instructions = client.instructions
    assert prompts == {"handoff", "resume"}
    assert "load_session" in resume.messages[0].content.text
    assert "github.com/acme/shop" in resume.messages[0].content.text
    text = handoff.messages[0].content.text
    assert "save_session" in text and "'auth-jwt'" in text and "decisions" in text
    assert instructions and "load_session" in instructions and "save_session" in instructions


def test_errors_the_sdk_answers_are_audited_as_errors(server, runtime, pg):
    user = make_user(runtime)
    unknown = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}).encode()
    reply = raw_post(server.url, unknown, user.key)
    assert "error" in reply.json()
    sql = "SELECT tool, outcome, error_class FROM audit_events WHERE user_id = %s"
    rows = audit_rows(
        pg.owner_url, sql, user.id, expect=1, settled=lambda rows: rows[0]["outcome"] == "error"
    )
    assert [(r["tool"], r["outcome"], r["error_class"]) for r in rows] == [("other", "error", "validation")]


def test_a_database_outage_gives_503_not_a_traceback(pg, runtime, capfd):

    from sessionvault.db.pool import Database
    from sessionvault.runtime import Runtime

    from ..conftest import free_port

    dead = Database(f"host=127.0.0.1 port={free_port()} dbname=x user=x", timeout=1)
    down = Runtime(runtime.settings, dead, runtime.keys, runtime.vault)
    try:
        with ServerThread(down) as s:
            reply = raw_post(s.url, LIST_TOOLS, "sv_live_" + "C" * 32)
    finally:
        dead.close()
    assert reply.status_code == 503 and reply.headers["retry-after"] == "5"
    assert reply.json() == {"error": "temporarily unavailable, try again"}
    lines = [json.loads(x) for x in capfd.readouterr().out.splitlines() if x.startswith('{"level"')]
    logged = [x for x in lines if x.get("message") == "request"]
    assert logged[-1]["error_class"] == "db" and logged[-1]["status"] == 503
    assert "127.0.0.1" not in json.dumps(logged)  # no connection string, host or message


@pytest.mark.parametrize("content_type", ["APPLICATION/JSON", "Application/Json; Charset=UTF-8"])
def test_a_media_type_in_any_case_is_json_to_the_edge_and_the_handler_alike(server, user, content_type):
    """Issue 35 item 6: the edge admitted (audited, charged) `APPLICATION/JSON` and the MCP
    handler then refused it with 415. Both judge it by one function now: it is served."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "list_sessions", "arguments": {}},
    }
    headers = {
        "Authorization": f"Bearer {user.key}",
        "Content-Type": content_type,
        "Accept": "application/json, text/event-stream",
    }
    reply = httpx2.post(server.url, content=json.dumps(body), headers=headers, timeout=30)
    assert reply.status_code == 200, reply.text
    assert reply.json()["result"]["structuredContent"]["sessions"] == []
