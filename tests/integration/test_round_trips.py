"""The round-trip budget of the serving path, pinned: a TCP proxy between the server and
Postgres counts the flights each authenticated request costs, over real HTTP. On Lambda every
one of them is a network hop, so a change that adds one must fail here, not in production."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import httpx2
import psycopg
import pytest

from sessionvault.runtime import Runtime, open_runtime

from ..conftest import ServerThread, make_settings, make_user
from ..support.pgproxy import PgProxy, proxied_url

# The budget on a warm instance (issue #21): a tool call's admission rides on the tool's own
# transaction (db/admission.py `Ride`), so load, list, delete and save are one flight each (a
# save's version is sealed before the insert: service/sealing.py); the protocol messages are
# their admission alone. A search is two since its vectors are sealed (issue 36): the first
# brings the keyword hits and the vectors' delta (and any segment not yet opened), the vectors
# are scored in memory, the second fetches the heads that scored best.
BUDGET = {
    "save_session": 1,
    "search_sessions": 2,
    "load_session": 1,
    "list_sessions": 1,
    "delete_session": 1,
    "tools/list": 1,
    "prompts/list": 1,
    "prompts/get": 1,
}


class FixedEmbedder:
    """A deterministic 384-d vector, so search runs its SQL without loading a model."""

    model = "test:fixed-384"

    def embed(self, text: str) -> list[float] | None:
        return [1.0] + [0.0] * 383


@dataclass
class Served:
    proxy: PgProxy
    server: ServerThread
    rt: Runtime
    key: str

    def post(self, method: str, params: dict | None = None) -> httpx2.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}
        headers = {
            "Authorization": f"Bearer {self.key}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        return httpx2.post(self.server.url, content=json.dumps(body), headers=headers, timeout=30)

    def flights(self, method: str, params: dict | None = None) -> int:
        """Round trips to Postgres that one request costs (after the pool is warm)."""
        self.proxy.wait_idle()
        before = self.proxy.snapshot()
        reply = self.post(method, params)
        assert reply.status_code == 200, reply.text
        assert "error" not in reply.json() and not reply.json()["result"].get("isError"), reply.text
        self.proxy.wait_idle()
        return (self.proxy.snapshot() - before).flights

    def tool(self, tool: str, /, **arguments: object) -> int:
        return self.flights("tools/call", {"name": tool, "arguments": arguments})


@pytest.fixture(scope="module")
def served(pg) -> Iterator[Served]:
    with PgProxy(pg.app_url) as proxy:
        url = proxied_url(pg.app_url, proxy) + " application_name=round-trips"
        rt = open_runtime(make_settings(pg, database_url=url), pool_size=2)
        rt.vault.embedder = FixedEmbedder()
        try:
            with ServerThread(rt) as server:
                served = Served(proxy, server, rt, make_user(rt).key)
                served.post("tools/list")  # open the pool's connections before counting
                yield served
        finally:
            rt.close()


def test_a_save_costs_one_round_trip(served):
    flights = served.tool("save_session", name="rt-save", summary="s", repo="github.com/a/b")
    assert flights == BUDGET["save_session"]


def test_loads_lists_and_deletes_cost_one_round_trip(served):
    served.tool("save_session", name="rt-load", summary="s", repo="github.com/a/b")
    measured = {
        "load by name": served.tool("load_session", name="rt-load"),
        "load latest for repo": served.tool("load_session", repo="github.com/a/b"),
        "load an earlier version": served.tool("load_session", name="rt-load", version=1),
        "list": served.tool("list_sessions"),
        "delete": served.tool("delete_session", name="rt-load"),
    }
    assert set(measured.values()) == {1}, measured


def test_a_search_costs_two_round_trips(served):
    served.tool("save_session", name="rt-search", summary="find me")
    assert served.tool("search_sessions", query="find me") == BUDGET["search_sessions"]


def test_the_first_tool_call_of_a_credential_costs_one_round_trip_more(served, pg):
    """A cold instance (or a credential it has not admitted lately) admits in a flight of its
    own first; the calls after it ride."""
    fresh = Served(served.proxy, served.server, served.rt, make_user(served.rt).key)
    assert [fresh.tool("list_sessions") for _ in range(3)] == [2, 1, 1]


def test_protocol_messages_cost_one_round_trip(served):
    measured = {
        "tools/list": served.flights("tools/list"),
        "prompts/list": served.flights("prompts/list"),
        "prompts/get": served.flights("prompts/get", {"name": "resume", "arguments": {"repo": "x"}}),
    }
    assert measured == {"tools/list": 1, "prompts/list": 1, "prompts/get": 1}


def test_a_connection_that_died_while_idle_is_replaced_and_the_request_succeeds(served, pg):
    # A frozen Lambda's connections are closed by the server or the pooler meanwhile.
    served.proxy.wait_idle()
    with psycopg.connect(pg.owner_url, autocommit=True) as owner:
        killed = owner.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = 'round-trips'"
        ).fetchone()[0]
    assert killed >= 1
    for call in ("list_sessions", "load_session"):
        reply = served.post(
            "tools/call", {"name": call, "arguments": {"name": "none"} if call == "load_session" else {}}
        )
        assert reply.status_code == 200 and not reply.json()["result"].get("isError"), reply.text


def test_an_oauth_token_costs_the_same_round_trips_as_an_api_key(served):
    """The access token is checked inside the same admission statement as a key (0005)."""
    from dataclasses import replace

    from ..support import oauth as flow

    with httpx2.Client(timeout=30) as http:
        _, tokens = flow.grant(http, flow.base_of(served.server.url), served.key)
    by_token = replace(served, key=tokens["access_token"])
    by_token.post("tools/list")
    served.tool("save_session", name="rt-oauth", summary="s")
    for who in (served, by_token):  # warm both paths alike
        who.tool("load_session", name="rt-oauth")
    by_key = {
        "tools/list": served.flights("tools/list"),
        "load": served.tool("load_session", name="rt-oauth"),
        "save": served.tool("save_session", name="rt-oauth-2", summary="s"),
    }
    with_token = {
        "tools/list": by_token.flights("tools/list"),
        "load": by_token.tool("load_session", name="rt-oauth"),
        "save": by_token.tool("save_session", name="rt-oauth-3", summary="s"),
    }
    assert with_token == by_key, (with_token, by_key)


def test_an_api_call_costs_one_round_trip_as_a_tool_call_does(served):
    """The HTTP API's admission rides on the call's transaction too (server/admission/riding.py), except
    where the answer cannot be held: an export is a stream, an import a body."""
    served.tool("save_session", name="rt-api", summary="s", repo="github.com/a/api")
    base = served.server.url.removesuffix("/mcp") + "/api/v1"
    headers = {"Authorization": f"Bearer {served.key}"}

    def flights(method: str, path: str, **params: str) -> int:
        served.proxy.wait_idle()
        before = served.proxy.snapshot()
        reply = httpx2.request(method, base + path, params=params, headers=headers, timeout=30)
        assert reply.status_code == 200, reply.text
        served.proxy.wait_idle()
        return (served.proxy.snapshot() - before).flights

    measured = {
        "list": flights("GET", "/sessions"),
        "get": flights("GET", "/session", name="rt-api"),
        "versions": flights("GET", "/session/versions", name="rt-api"),
        "handoffs": flights("GET", "/handoffs"),
        "delete": flights("DELETE", "/session", name="rt-api"),
    }
    assert set(measured.values()) == {1}, measured
