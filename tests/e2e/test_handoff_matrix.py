"""The handoff matrix: every client can be pointed at the server, and a session crosses between
the two ways clients reach it (Streamable HTTP directly, or the stdio `sessionvault bridge`).

A pairwise product of clients (save in client A, load in client B) would be pointless: each
client's config is written independently and every one of them ends at the same server, over
one of those two transports. So each client's config is tested once (it parses and points at
the server), and the handoff is tested once per transport pair, in both directions."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, stdio_client

from sessionvault.local.setup import files, registry
from sessionvault.names import SERVER_NAME

from ..conftest import mcp_client

URL = "https://vault.example.com/mcp"
KEY = "sv_live_" + "K" * 32
BRIDGE = ["-m", "sessionvault.cli.main", "bridge"]


@pytest.mark.parametrize("client", list(registry.CLIENTS))
def test_each_client_config_parses_and_points_at_the_server(client: str, tmp_path: Path) -> None:
    spec = registry.CLIENTS[client]
    result = files.apply(client, URL, KEY, use_env=False, home=tmp_path, cwd=tmp_path)
    data = files.read(result.path, spec.fmt)
    entry = data[spec.container][SERVER_NAME]
    if spec.url_key is None:  # a stdio bridge entry
        args = entry["args"]
        i = args.index("--url")
        assert args[i - 1] == "bridge" and args[i + 1] == URL, entry
    else:
        assert entry[spec.url_key] == URL, entry


def bridge(url: str, key: str) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=[*BRIDGE, "--url", url], env={"SESSIONVAULT_API_KEY": key}
    )
    return Client(stdio_client(params))


def record(result: Any) -> str:
    assert not result.is_error, result.content
    return json.dumps(result.structured_content, sort_keys=True)


def session(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "repo": "github.com/acme/shop",
        "summary": 'Cart service extracted; payment next. Ünïcødé and "quotes" survive.',
        "todos": ["wire payment", "drop the old cart table"],
    }


@pytest.mark.anyio
async def test_saved_over_http_loads_identically_through_the_bridge(server, user) -> None:
    with anyio.fail_after(60):
        async with mcp_client(server.url, user.key) as http:
            assert not (await http.call_tool("save_session", session("http-to-bridge"))).is_error
            direct = record(await http.call_tool("load_session", {"name": "http-to-bridge"}))
        async with bridge(server.url, user.key) as stdio:
            bridged = record(await stdio.call_tool("load_session", {"name": "http-to-bridge"}))
    assert bridged == direct
    assert json.loads(direct)["summary"] == session("")["summary"]


@pytest.mark.anyio
async def test_saved_through_the_bridge_loads_identically_over_http(server, user) -> None:
    with anyio.fail_after(60):
        async with bridge(server.url, user.key) as stdio:
            assert not (await stdio.call_tool("save_session", session("bridge-to-http"))).is_error
            bridged = record(await stdio.call_tool("load_session", {"name": "bridge-to-http"}))
        async with mcp_client(server.url, user.key) as http:
            direct = record(await http.call_tool("load_session", {"name": "bridge-to-http"}))
    assert direct == bridged
    assert json.loads(bridged)["todos"] == session("")["todos"]
