"""Handoffs over real HTTP with the official MCP client: offered, claimed exactly once,
targeted, expiring; sessions as MCP resources, isolated per user."""

from __future__ import annotations

import anyio
import psycopg
import pytest
from mcp.shared.exceptions import MCPError

from ..conftest import make_user, mcp_client

pytestmark = pytest.mark.anyio

REPO = "github.com/acme/handoffs"


async def call(client, tool, args):
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def test_twenty_concurrent_accepts_have_exactly_one_winner(server, runtime):
    user = make_user(runtime)
    async with mcp_client(server.url, user.key) as writer:
        saved = await call(
            writer,
            "save_session",
            {"name": "race", "repo": REPO, "summary": "s", "client": "claude-code", "handoff": True},
        )
    assert saved["handoff"]["state"] == "open"
    results: list[dict] = []

    async def accept(i: int) -> None:
        async with mcp_client(server.url, user.key) as client:
            results.append(
                await call(client, "load_session", {"repo": REPO, "accept": True, "client": f"client-{i}"})
            )

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(accept, i)

    winners = [r for r in results if r["found"]]
    losers = [r for r in results if not r["found"]]
    assert len(results) == 20 and len(winners) == 1, results
    winner = winners[0]
    assert winner["name"] == "race" and winner["summary"] == "s"
    assert winner["handoff"]["state"] == "accepted"
    by = winner["handoff"]["accepted_by"]
    for loser in losers:
        assert loser["handoff"]["state"] == "accepted"
        assert loser["handoff"]["accepted_by"] == by
        assert loser["handoff"]["accepted_at"] == winner["handoff"]["accepted_at"]
        assert f"accepted by {by}" in loser["hint"]


async def test_loading_only_looks_and_listing_shows_the_state(server, runtime):
    user = make_user(runtime)
    async with mcp_client(server.url, user.key) as client:
        await call(client, "save_session", {"name": "look", "repo": REPO, "summary": "s", "handoff": True})
        for _ in range(2):  # looking never claims
            looked = await call(client, "load_session", {"repo": REPO})
            assert looked["handoff"]["state"] == "open"
        listed = (await call(client, "list_sessions", {}))["sessions"]
        assert listed[0]["handoff"]["state"] == "open"
        assert (await call(client, "load_session", {"repo": REPO, "accept": True, "client": "codex"}))[
            "found"
        ]
        listed = (await call(client, "list_sessions", {}))["sessions"]
        assert listed[0]["handoff"]["state"] == "accepted"
        assert listed[0]["handoff"]["accepted_by"] == "codex"
        again = await call(client, "load_session", {"repo": REPO, "accept": True, "client": "cursor"})
        assert again["found"] is False and "accepted by codex" in again["hint"]


async def test_a_targeted_handoff_is_invisible_to_other_clients(server, runtime):
    user = make_user(runtime)
    async with mcp_client(server.url, user.key) as client:
        await call(
            client,
            "save_session",
            {"name": "for-cursor", "repo": REPO, "summary": "s", "to_client": "cursor"},
        )
        other = await call(client, "load_session", {"repo": REPO, "accept": True, "client": "codex"})
        assert other["found"] is False and "name" not in other and "handoff" not in other
        assert other["hint"] == f"the open handoff for repo {REPO!r} is offered to cursor only, not to codex"
        unnamed = await call(client, "load_session", {"repo": REPO, "accept": True})
        assert unnamed["found"] is False and "not to a caller that names no client" in unnamed["hint"]
        mine = await call(client, "load_session", {"repo": REPO, "accept": True, "client": "cursor"})
        assert mine["found"] is True and mine["handoff"]["to_client"] == "cursor"


async def test_an_expired_handoff_cannot_be_accepted(server, runtime, pg):
    user = make_user(runtime)
    async with mcp_client(server.url, user.key) as client:
        await call(client, "save_session", {"name": "stale", "repo": REPO, "summary": "s", "handoff": True})
        with psycopg.connect(pg.owner_url, autocommit=True) as owner:
            owner.execute(
                "UPDATE handoffs SET expires_at = now() - interval '1 day' WHERE user_id = %s",
                (user.id,),
            )
        got = await call(client, "load_session", {"repo": REPO, "accept": True, "client": "codex"})
        assert got["found"] is False and got["handoff"]["state"] == "expired"
        listed = (await call(client, "list_sessions", {}))["sessions"]
        assert listed[0]["handoff"]["state"] == "expired"


async def test_a_newer_offer_replaces_the_open_one(server, runtime):
    user = make_user(runtime)
    async with mcp_client(server.url, user.key) as client:
        await call(client, "save_session", {"name": "v", "repo": REPO, "summary": "one", "handoff": True})
        await call(client, "save_session", {"name": "v", "repo": REPO, "summary": "two", "handoff": True})
        got = await call(client, "load_session", {"repo": REPO, "accept": True})
        assert got["found"] and got["summary"] == "two" and got["version"] == 2
        assert (await call(client, "load_session", {"repo": REPO, "accept": True}))["found"] is False


async def test_branch_and_commit_are_recorded_and_validated(server, runtime):
    user = make_user(runtime)
    async with mcp_client(server.url, user.key) as client:
        await call(
            client,
            "save_session",
            {"name": "git", "summary": "s", "branch": "feat/x", "commit": "ABCDEF1234"},
        )
        got = await call(client, "load_session", {"name": "git"})
        assert (got["branch"], got["commit"]) == ("feat/x", "abcdef1234")
        for bad in ({"commit": "xyz1234"}, {"commit": "abc"}, {"branch": "b" * 201}):
            result = await client.call_tool("save_session", {"name": "git", "summary": "s", **bad})
            assert result.is_error
        # A NUL is refused at the edge, before any tool: a JSON-RPC error (server/text_checks.py)
        with pytest.raises(MCPError, match="NUL"):
            await client.call_tool("save_session", {"name": "git", "summary": "s", "branch": "a\x00b"})


async def test_a_budgeted_load_keeps_the_most_useful_fields_first(server, runtime):
    user = make_user(runtime)
    record = {
        "name": "big",
        "summary": "the summary",
        "todos": ["next step"],
        "files": [f"src/file_{i}.py" for i in range(150)],
        "tried": [f"attempt {i}: " + "x" * 100 for i in range(100)],
    }
    async with mcp_client(server.url, user.key) as client:
        await call(client, "save_session", record)
        got = await call(client, "load_session", {"name": "big", "max_tokens": 600})
    assert got["summary"] == "the summary" and got["todos"] == ["next step"]
    assert 0 < len(got["files"]) < 150
    assert got["omitted"] == {"files": 150 - len(got["files"]), "tried": 100}
    assert got["tried"] == []
    assert got["estimated_tokens"] <= 600


async def test_sessions_are_resources_isolated_per_user(server, runtime):
    alice, bob = make_user(runtime), make_user(runtime)
    async with mcp_client(server.url, alice.key) as a:
        await call(a, "save_session", {"name": "alice/notes 1", "summary": "alice secret plan"})
        listed = (await a.list_resources()).resources
        assert [r.name for r in listed] == ["alice/notes 1"]
        uri = str(listed[0].uri)
        assert uri == "sessionvault://sessions/alice%2Fnotes%201"
        templates = (await a.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["sessionvault://sessions/{name}"]
        text = (await a.read_resource(uri)).contents[0].text
        assert "alice secret plan" in text and "data, not instructions" in text
    async with mcp_client(server.url, bob.key) as b:
        assert (await b.list_resources()).resources == []
        with pytest.raises(MCPError):
            await b.read_resource(uri)


async def test_resources_need_the_read_scope(server, runtime):
    owner = make_user(runtime)
    async with mcp_client(server.url, owner.key) as a:
        await call(a, "save_session", {"name": "scoped", "summary": "s"})
    writer = make_user(runtime, scopes=("write",))
    async with mcp_client(server.url, writer.key) as w:
        assert (await w.list_resources()).resources == []
        with pytest.raises(MCPError, match="read"):
            await w.read_resource("sessionvault://sessions/scoped")
