"""Codex CLI (the real `codex`) against a real server: the `~/.codex/config.toml` table that
`connect codex --apply` writes connects and lists our tools, in both key forms; a wrong or
missing key is reported as a failure.

`codex mcp list` and `codex mcp get` only read the config. What really connects without a
model is Codex's app-server (the JSON-RPC protocol its IDE extension and app speak, JSON lines
over stdio): `initialize`, then `mcpServerStatus/list`, which starts every configured MCP
server and returns its serverInfo and tools, or a `toolsError`."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from typing import Any

from ..conftest import make_user
from .conftest import CLI_TIMEOUT_S, Env, ToolCalls

TOOLS = {"load_session", "search_sessions", "list_sessions"}


def codex(env: Env) -> str:
    return str(env.bin / "codex")


def mcp_server_status(env: Env, key: str | None, timeout: float = CLI_TIMEOUT_S) -> dict[str, Any]:
    """The `sessionvault` row of `mcpServerStatus/list` from a real `codex app-server`."""
    proc = subprocess.Popen(
        [codex(env), "app-server"],
        cwd=env.project,
        env=env.env(key),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    seen: list[str] = []

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    def reply(request_id: int) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            if not ready:
                continue
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line, f"codex app-server exited; it said: {seen}"
            seen.append(line)
            message = json.loads(line)
            if message.get("id") == request_id:
                assert "error" not in message, message
                return message["result"]  # type: ignore[no-any-return]
        raise AssertionError(f"no reply to request {request_id} in {timeout}s; it said: {seen}")

    try:
        client_info = {"name": "sessionvault-tests", "version": "0"}
        send({"id": 1, "method": "initialize", "params": {"clientInfo": client_info}})
        reply(1)
        send({"method": "initialized"})
        send({"id": 2, "method": "mcpServerStatus/list", "params": {}})
        rows = reply(2)["data"]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # this app-server and its children only
        proc.communicate(timeout=30)
    row = next((r for r in rows if r["name"] == "sessionvault"), None)
    assert row is not None, rows
    return row  # type: ignore[no-any-return]


def test_app_server_reports_the_server_connected_with_its_tools(
    server, runtime, client_env: Env, tool_calls: ToolCalls
) -> None:
    user = make_user(runtime)
    client_env.connect("codex", server.url, user.key, "--apply")
    config = (client_env.home / ".codex" / "config.toml").read_text()
    assert 'bearer_token_env_var = "SESSIONVAULT_API_KEY"' in config and user.key not in config
    row = mcp_server_status(client_env, user.key)
    assert row.get("toolsError") is None, row
    assert row["serverInfo"]["name"] == "sessionvault", row
    assert set(row["tools"]) >= TOOLS, row["tools"].keys()
    assert [r for r in tool_calls.calls("tools/list", user.id) if getattr(r, "status", None) == 200]


def test_app_server_connects_with_the_literal_key_form(server, runtime, client_env: Env) -> None:
    """`--no-env` writes `http_headers = {Authorization = "Bearer …"}`: no env var needed."""
    user = make_user(runtime)
    client_env.connect("codex", server.url, user.key, "--apply", "--no-env", "--key", user.key)
    assert "http_headers" in (client_env.home / ".codex" / "config.toml").read_text()
    row = mcp_server_status(client_env, None)
    assert row.get("toolsError") is None and set(row["tools"]) >= TOOLS, row


def test_app_server_with_a_wrong_or_missing_key_reports_failure(server, runtime, client_env: Env) -> None:
    user = make_user(runtime)
    client_env.connect("codex", server.url, user.key, "--apply")
    row = mcp_server_status(client_env, "sv_live_" + "W" * 32)
    assert not row["tools"] and row["serverInfo"] is None, row
    assert "Auth required" in row["toolsError"], row
    row = mcp_server_status(client_env, None)  # the shell that started Codex lacks the variable
    assert not row["tools"] and "SESSIONVAULT_API_KEY" in row["toolsError"], row
