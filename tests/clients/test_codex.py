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
from ..support.model_recorder import ModelRecorder
from .conftest import CLI_TIMEOUT_S, Env, ToolCalls, save_marked_session

TOOLS = {"load_session", "search_sessions", "list_sessions"}


def codex(env: Env) -> str:
    return str(env.bin / "codex")


def app_server(env: Env, key: str | None, method: str, params: dict[str, Any]) -> Any:
    """The result of one request to a real `codex app-server` (after its handshake). The raw pipe
    is read with os.read: select() on a buffered text pipe misses a reply that arrived in the
    same read as an earlier line (1 call in ~25 then waited 90 s)."""
    proc = subprocess.Popen(
        [codex(env), "app-server"],
        cwd=env.project,
        env=env.env(key),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, fd = proc.stdin, proc.stdout.fileno()
    pending, seen = b"", list[str]()

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()

    def reply(request_id: int) -> Any:
        nonlocal pending
        deadline = time.monotonic() + CLI_TIMEOUT_S
        while time.monotonic() < deadline:
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                seen.append(line.decode())
                message = json.loads(line) if line.strip() else {}
                if message.get("id") == request_id:
                    assert "error" not in message, message
                    return message["result"]
            if select.select([fd], [], [], 0.5)[0]:
                chunk = os.read(fd, 1 << 16)
                assert chunk, f"codex app-server exited; it said: {seen}"
                pending += chunk
        raise AssertionError(f"no reply to request {request_id} in {CLI_TIMEOUT_S}s; it said: {seen}")

    try:
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {"clientInfo": {"name": "sessionvault-tests", "version": "0"}},
            }
        )
        reply(1)
        send({"method": "initialized"})
        send({"id": 2, "method": method, "params": params})
        return reply(2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # this app-server and its children only
        proc.communicate(timeout=30)


def mcp_server_status(env: Env, key: str | None) -> dict[str, Any]:
    """The `sessionvault` row of `mcpServerStatus/list`."""
    rows = app_server(env, key, "mcpServerStatus/list", {})["data"]
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


def use_recorder_as_model(env: Env, model: ModelRecorder) -> None:
    """A custom model provider whose base_url is the recorder: `codex exec` then needs no
    OpenAI login and no key. Top-level keys go before the tables `connect` wrote."""
    path = env.home / ".codex" / "config.toml"
    provider = (
        "\n[model_providers.recorder]\n"
        f'name = "recorder"\nbase_url = "{model.base_url}/v1"\nwire_api = "responses"\n'
    )
    path.write_text('model_provider = "recorder"\nmodel = "gpt-5"\n\n' + path.read_text() + provider)


def trust_our_hooks(env: Env, key: str) -> list[dict[str, Any]]:
    """What trusting the hook in Codex's `/hooks` does, through Codex's own app-server:
    `hooks/list` gives each hook's key and current hash, `config/value/write` records it as
    `[hooks.state."<key>"] trusted_hash` in config.toml. Returns our hooks as Codex lists them."""
    [listed] = app_server(env, key, "hooks/list", {"cwds": [str(env.project)]})["data"]
    ours = [h for h in listed["hooks"] if "hook session-start --client codex" in h["command"]]
    state = {h["key"]: {"trusted_hash": h["currentHash"]} for h in ours}
    app_server(
        env, key, "config/value/write", {"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}
    )
    return ours


def test_the_session_start_hook_runs_once_trusted_and_its_output_reaches_the_model(
    server, runtime, client_env: Env, model: ModelRecorder, tool_calls: ToolCalls
) -> None:
    """`connect codex --hooks` writes ~/.codex/hooks.json. Codex lists the hook but skips it,
    silently, until the user trusts it; once trusted, `codex exec` runs it at session start and
    the saved session it printed (a unique marker) is in the request sent to the model."""
    user = make_user(runtime)
    marker = save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("codex", server.url, user.key, "--hooks")
    use_recorder_as_model(client_env, model)
    exec_argv = [codex(client_env), "exec", "hi"]

    done = client_env.run(exec_argv, user.key)  # untrusted: the run ends at the model's error
    assert model.requests, done.stdout + done.stderr  # the model was asked...
    assert not model.saw(marker) and not tool_calls.calls("load_session", user.id)  # ...without the hook

    [hook] = trust_our_hooks(client_env, user.key)
    assert hook["eventName"] == "sessionStart" and hook["matcher"] == "startup|clear", hook
    assert hook["source"] == "user" and hook["command"].startswith("/"), hook
    [listed] = app_server(client_env, user.key, "hooks/list", {"cwds": [str(client_env.project)]})["data"]
    trusted = {h["eventName"]: h["trustStatus"] for h in listed["hooks"]}
    # Only the one we trusted: the checkpoint hooks `--hooks` also wrote wait for their own trust.
    assert trusted == {
        "sessionStart": "trusted",
        "stop": "untrusted",
        "preCompact": "untrusted",
        "sessionEnd": "untrusted",
    }, listed
    seen, _ = client_env.until(exec_argv, user.key, lambda: model.saw(marker), timeout=90)
    assert tool_calls.calls("load_session", user.id), client_env.last_output  # the hook ran
    assert seen, f"{model.summary()}\n{client_env.last_output}"
