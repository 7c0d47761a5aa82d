"""The serving path behind a transaction-mode pooler (PgBouncer, as Neon's pooled endpoint and
RDS Proxy are): every tool works, pipelined transactions hold, and the tenant set in one
client's transaction never reaches another client sharing the same server connection."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from sessionvault.runtime import Runtime, open_runtime

from ..conftest import ServerThread, make_settings, make_user
from ..support.jsonrpc import tool_result
from ..support.pgbouncer import PgBouncer


@pytest.fixture(scope="module")
def bounced(pg) -> Iterator[tuple[ServerThread, Runtime]]:
    with PgBouncer(pg.app_url) as bouncer:
        rt = open_runtime(make_settings(pg, database_url=bouncer.url(pg.app_url)), pool_size=8)
        try:
            with ServerThread(rt) as server:
                yield server, rt
        finally:
            rt.close()


def call(url: str, key: str, tool: str, **arguments: object) -> dict:
    result = tool_result(url, key, tool, **arguments)
    assert not result.get("isError"), result
    return result["structuredContent"]


def test_every_tool_works_behind_a_transaction_pooler(bounced):
    server, rt = bounced
    key = make_user(rt).key
    assert call(server.url, key, "save_session", name="pooled", summary="one", repo="r")["version"] == 1
    assert call(server.url, key, "save_session", name="pooled", summary="two", repo="r")["version"] == 2
    assert call(server.url, key, "load_session", name="pooled")["summary"] == "two"
    assert call(server.url, key, "load_session", repo="r")["versions"] == [2, 1]
    assert [s["name"] for s in call(server.url, key, "list_sessions")["sessions"]] == ["pooled"]
    assert call(server.url, key, "delete_session", name="pooled")["versions_deleted"] == 2


def test_concurrent_tenants_sharing_pooled_connections_see_only_their_own_rows(bounced):
    server, rt = bounced
    users = [make_user(rt) for _ in range(6)]

    def work(i: int) -> list[str]:
        key = users[i % len(users)].key
        call(server.url, key, "save_session", name=f"mine-{i}", summary=f"user {i % len(users)}")
        return [s["name"] for s in call(server.url, key, "list_sessions", limit=100)["sessions"]]

    with ThreadPoolExecutor(max_workers=12) as pool:
        listings = list(pool.map(work, range(36)))
    for i, names in enumerate(listings):
        owner = i % len(users)
        assert all(int(name.split("-")[1]) % len(users) == owner for name in names), (i, names)
