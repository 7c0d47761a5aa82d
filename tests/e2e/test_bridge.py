"""End to end: an MCP stdio client launches `sessionvault bridge`, which forwards to the real
SessionVault server over Streamable HTTP."""

import sys
import threading
from pathlib import Path
from typing import TextIO

import anyio
import pytest
import uvicorn
from mcp import Client, MCPError, StdioServerParameters, stdio_client

from sessionvault.server.app import SessionVaultApp
from sessionvault.server.mcp.tools import INSTRUCTIONS

from ..conftest import ServerThread, free_port, make_user, mcp_client

pytestmark = pytest.mark.anyio

TOOLS = [
    "save_session",
    "load_session",
    "search_sessions",
    "list_sessions",
    "delete_session",
    "delete_all_sessions",
]
BRIDGE = ["-m", "sessionvault.cli.main", "bridge"]


def bridge(url: str, key: str | None, errlog: TextIO = sys.stderr) -> Client:
    env = {} if key is None else {"SESSIONVAULT_API_KEY": key}
    params = StdioServerParameters(command=sys.executable, args=[*BRIDGE, "--url", url], env=env)
    return Client(stdio_client(params, errlog=errlog))


def text(result) -> str:
    return result.content[0].text


async def test_tools_prompts_and_instructions_pass_through(server, runtime):
    user = make_user(runtime)
    async with mcp_client(server.url, user.key) as direct:
        upstream_tools = (await direct.list_tools()).tools
    with anyio.fail_after(60):
        async with bridge(server.url, user.key) as client:
            assert client.instructions == INSTRUCTIONS
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == TOOLS
            assert [t.model_dump(exclude_none=True) for t in tools] == [
                t.model_dump(exclude_none=True) for t in upstream_tools
            ]
            prompts = (await client.list_prompts()).prompts
            assert {p.name for p in prompts} == {"handoff", "resume"}
            resume = await client.get_prompt("resume", {"repo": "github.com/acme/shop"})
            assert "load_session" in resume.messages[0].content.text
            assert "github.com/acme/shop" in resume.messages[0].content.text


async def test_resources_pass_through(server, runtime):
    user = make_user(runtime)
    summary = "Bridge resources: the cart session, as an @-mention attaches it"
    async with mcp_client(server.url, user.key) as direct:
        saved = await direct.call_tool("save_session", {"name": "cart/v2", "repo": "r", "summary": summary})
        assert not saved.is_error
        upstream = (
            await direct.list_resources(),
            await direct.list_resource_templates(),
            await direct.read_resource("sessionvault://sessions/cart%2Fv2"),
        )
    with anyio.fail_after(60):
        async with bridge(server.url, user.key) as client:
            assert client.server_capabilities.resources is not None
            listed = await client.list_resources()
            assert [r.uri for r in listed.resources] == ["sessionvault://sessions/cart%2Fv2"]
            templates = await client.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == [
                "sessionvault://sessions/{name}"
            ]
            read = await client.read_resource(listed.resources[0].uri)
            assert summary in read.contents[0].text
            assert [x.model_dump(exclude_none=True) for x in (listed, templates, read)] == [
                x.model_dump(exclude_none=True) for x in upstream
            ]
            # The server's own errors come back unchanged: code and message.
            with pytest.raises(MCPError) as missing:
                await client.read_resource("sessionvault://sessions/no-such-session")
            # (upstream the bridge speaks 2026-07-28, where a missing resource is -32602: SEP-2164)
            assert missing.value.code == -32602 and "no session by that name" in missing.value.message
            assert missing.value.data == {"uri": "sessionvault://sessions/no-such-session"}
            with pytest.raises(MCPError) as foreign:
                await client.read_resource("file:///etc/passwd")
            assert foreign.value.code == -32602 and "session URIs look like" in foreign.value.message
            assert foreign.value.data == {"uri": "file:///etc/passwd"}  # every not-found names its URI


async def test_a_read_less_key_sees_no_resources_through_the_bridge(server, runtime):
    user = make_user(runtime, scopes=("write",))
    with anyio.fail_after(60):
        async with bridge(server.url, user.key) as client:
            assert (await client.list_resources()).resources == []
            assert (await client.list_resource_templates()).resource_templates == []
            with pytest.raises(MCPError, match="'read' scope"):
                await client.read_resource("sessionvault://sessions/anything")


async def test_save_then_load_through_the_bridge(server, runtime):
    user = make_user(runtime)
    summary = "Bridge handoff: cart service extracted, payment next"
    with anyio.fail_after(60):
        async with bridge(server.url, user.key) as client:
            saved = await client.call_tool(
                "save_session", {"name": "bridge-handoff", "repo": "r", "summary": summary, "todos": ["pay"]}
            )
            assert not saved.is_error, text(saved)
            assert saved.structured_content["version"] == 1
            loaded = await client.call_tool("load_session", {"name": "bridge-handoff"})
            assert not loaded.is_error, text(loaded)
            assert loaded.structured_content["summary"] == summary
            assert loaded.structured_content["todos"] == ["pay"]
            assert summary in text(loaded)  # the text content passes through too
            # Tool-level errors from the server come back unchanged, as is_error results.
            bad = await client.call_tool("load_session", {"name": "x", "user_id": user.id})
            assert bad.is_error and "user_id" in text(bad)
    async with mcp_client(server.url, user.key) as direct:  # it really reached the server
        again = await direct.call_tool("load_session", {"name": "bridge-handoff"})
        assert again.structured_content["summary"] == summary


async def test_a_wrong_key_is_a_clear_tool_error_and_the_bridge_stays_up(server, tmp_path: Path):
    wrong = "sv_live_" + "0" * 40
    log = tmp_path / "bridge.log"
    with log.open("w") as errlog, anyio.fail_after(60):
        async with bridge(server.url, wrong, errlog) as client:
            for _ in range(2):  # still answering after the first failure
                result = await client.call_tool("list_sessions", {})
                assert result.is_error
                assert "API key" in text(result) and "SESSIONVAULT_API_KEY" in text(result)
            for request in (
                client.list_tools,
                client.list_prompts,
                client.list_resources,
                client.list_resource_templates,
                lambda: client.read_resource("sessionvault://sessions/x"),
            ):
                with pytest.raises(MCPError, match="rejected the API key"):
                    await request()
    assert wrong not in log.read_text()  # never logged


async def test_a_missing_key_is_explained_without_crashing(server):
    with anyio.fail_after(60):
        async with bridge(server.url, None) as client:
            for request in (client.list_tools, client.list_resources):
                with pytest.raises(MCPError, match="SESSIONVAULT_API_KEY is not set"):
                    await request()
            result = await client.call_tool("load_session", {"repo": "r"})
            assert result.is_error and "SESSIONVAULT_API_KEY is not set" in text(result)


def serve_on(runtime, port: int) -> ServerThread:
    """A real server on a chosen port: the bridge's upstream going down and coming back."""
    s = ServerThread(runtime)
    s.port, s.url = port, f"http://127.0.0.1:{port}/mcp"
    s.server = uvicorn.Server(
        uvicorn.Config(SessionVaultApp(runtime), host="127.0.0.1", port=port, log_level="warning")
    )
    s.thread = threading.Thread(target=s.server.run, daemon=True)
    return s


async def test_an_unreachable_server_is_a_tool_error_and_the_bridge_recovers(runtime):
    user = make_user(runtime)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with anyio.fail_after(120):
        async with bridge(url, user.key) as client:  # nothing listens yet: starts anyway
            result = await client.call_tool("list_sessions", {})
            assert result.is_error and "Cannot reach" in text(result) and url in text(result)
            with serve_on(runtime, port):
                result = await client.call_tool("list_sessions", {})
                assert not result.is_error, text(result)
            result = await client.call_tool("list_sessions", {})  # lost after connecting
            assert result.is_error and "Cannot reach" in text(result)
            with serve_on(runtime, port):
                result = await client.call_tool("list_sessions", {})
                assert not result.is_error, text(result)
