"""Qwen Code (the real `qwen`, a Gemini CLI fork) against a real server. It reads
`~/.qwen/settings.json` with Gemini's entry shape (`mcpServers.<name>.httpUrl` for Streamable
HTTP, `headers`, `$VAR` expanded from the environment); `qwen mcp list` connects to each server.

`qwen mcp list` only initializes; the tools are seen in a `qwen -p` run whose model endpoint is
a closed port: it lists our tools before the (failing) model call. Where `sessionvault connect`
has no Qwen client, the tests of what it writes skip; the entry shape is proven by hand too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ..conftest import make_user
from ..support.model_recorder import ModelRecorder
from .conftest import Env, ToolCalls, save_marked_session

NO_MODEL = {"QWEN_CODE_NO_RELAUNCH": "true", "QWEN_TELEMETRY_ENABLED": "false"}
WRONG_KEY = "sv_live_" + "W" * 32


def qwen(env: Env) -> str:
    return str(env.bin / "qwen")


def sessionvault_line(out: str) -> str:
    return next((row for row in out.splitlines() if "sessionvault" in row and "http" in row), "")


def connect_client_name() -> str | None:
    from sessionvault.local.setup import registry

    return next((name for name in ("qwen", "qwen-code") if name in registry.CLIENTS), None)


def write_settings(env: Env, url: str, token: str) -> None:
    """The entry `connect qwen --apply` should write: Gemini's, in Qwen's own folder."""
    entry: dict[str, Any] = {"httpUrl": url, "headers": {"Authorization": f"Bearer {token}"}}
    path = env.home / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": {"sessionvault": entry}}, indent=2))


def mcp_list(env: Env, key: str | None) -> str:
    done = env.run([qwen(env), "mcp", "list"], key, **NO_MODEL)
    return done.stdout + done.stderr


def authenticated_tool_lists(tool_calls: ToolCalls, user_id: object) -> list[object]:
    return [r for r in tool_calls.calls("tools/list", str(user_id)) if getattr(r, "status", None) == 200]


def connect_qwen(env: Env, url: str, key: str, *extra: str) -> None:
    client = connect_client_name()
    if client is None:
        pytest.skip(
            "`sessionvault connect` has no Qwen Code client yet (registry.CLIENTS lacks qwen); "
            "the shape it should write is proven by test_the_gemini_shape_in_qwen_settings_connects"
        )
    env.connect(client, url, key, "--apply", *extra)


def test_mcp_list_reports_the_server_connected(
    server, runtime, client_env: Env, tool_calls: ToolCalls
) -> None:
    user = make_user(runtime)
    connect_qwen(client_env, server.url, user.key)
    settings = json.loads((client_env.home / ".qwen" / "settings.json").read_text())
    entry = settings["mcpServers"]["sessionvault"]
    assert entry == {"httpUrl": server.url, "headers": {"Authorization": "Bearer $SESSIONVAULT_API_KEY"}}
    out = mcp_list(client_env, user.key)
    line = sessionvault_line(out)
    assert "Connected" in line and "Disconnected" not in line and server.url in line, out
    # `qwen mcp list` only initializes (no tools/list): the key reached the server as this user.
    assert [r for r in tool_calls.calls("initialize", str(user.id)) if getattr(r, "status", None) == 200]


def test_mcp_list_with_a_wrong_key_reports_failure(server, runtime, client_env: Env) -> None:
    user = make_user(runtime)
    connect_qwen(client_env, server.url, user.key)
    line = sessionvault_line(mcp_list(client_env, WRONG_KEY))
    assert line and "Disconnected" in line, line
    line = sessionvault_line(mcp_list(client_env, None))  # the variable is not set at all
    assert line and "Disconnected" in line, line
    connect_qwen(client_env, server.url, user.key, "--no-env", "--key", user.key)  # the literal form
    line = sessionvault_line(mcp_list(client_env, None))
    assert "Connected" in line and "Disconnected" not in line, line


def test_a_headless_run_fetches_our_tools_before_the_model_call(
    server, runtime, client_env: Env, closed_url: str, tool_calls: ToolCalls
) -> None:
    """`qwen -p` starts its MCP servers and lists their tools before it calls the model (here
    an OpenAI-compatible endpoint on a closed port, with a dummy key)."""
    user = make_user(runtime)
    connect_qwen(client_env, server.url, user.key)
    settings = client_env.home / ".qwen" / "settings.json"
    data = json.loads(settings.read_text())
    data["security"] = {"auth": {"selectedType": "openai"}}
    settings.write_text(json.dumps(data, indent=2))
    seen, _ = client_env.until(
        [qwen(client_env), "-p", "hi"],
        user.key,
        lambda: bool(authenticated_tool_lists(tool_calls, user.id)),
        timeout=60,
        OPENAI_API_KEY="dummy-not-a-key",
        OPENAI_BASE_URL=closed_url + "/v1",
        OPENAI_MODEL="qwen3-coder-plus",
        **NO_MODEL,
    )
    assert seen, client_env.last_output


def test_the_gemini_shape_in_qwen_settings_connects(server, runtime, client_env: Env) -> None:
    """Independent of `connect`: Gemini's entry in ~/.qwen/settings.json, env-var form and
    literal form, against the real `qwen`."""
    user = make_user(runtime)
    write_settings(client_env, server.url, "$SESSIONVAULT_API_KEY")
    line = sessionvault_line(mcp_list(client_env, user.key))
    assert "Connected" in line and "Disconnected" not in line and server.url in line, line
    line = sessionvault_line(mcp_list(client_env, WRONG_KEY))
    assert line and "Disconnected" in line, line
    write_settings(client_env, server.url, user.key)
    line = sessionvault_line(mcp_list(client_env, None))
    assert "Connected" in line and "Disconnected" not in line, line


def test_the_session_start_hook_output_reaches_the_model(
    server, runtime, client_env: Env, model: ModelRecorder, tool_calls: ToolCalls
) -> None:
    """`connect qwen --hooks` writes a SessionStart hook (timeout in seconds) into
    ~/.qwen/settings.json; `qwen -p` runs it at startup, and the saved session it printed (a
    unique marker) is in the request Qwen Code sends to its model (OPENAI_BASE_URL: the recorder)."""
    user = make_user(runtime)
    marker = save_marked_session(server.url, user.key, client_env.project)
    connect_qwen(client_env, server.url, user.key, "--hooks")
    settings = client_env.home / ".qwen" / "settings.json"
    data = json.loads(settings.read_text())
    [group] = data["hooks"]["SessionStart"]
    [hook] = group["hooks"]
    assert group["matcher"] == "startup" and hook["timeout"] == 5 and hook["command"].startswith("/")
    data["security"] = {"auth": {"selectedType": "openai"}}
    settings.write_text(json.dumps(data, indent=2))
    seen, _ = client_env.until(
        [qwen(client_env), "-p", "hi"],
        user.key,
        lambda: model.saw(marker),
        timeout=90,
        OPENAI_API_KEY="dummy-not-a-key",
        OPENAI_BASE_URL=model.base_url + "/v1",
        OPENAI_MODEL="qwen3-coder-plus",
        **NO_MODEL,
    )
    assert tool_calls.calls("load_session", user.id), client_env.last_output  # the hook ran
    assert seen, f"{model.summary()}\n{client_env.last_output}"
