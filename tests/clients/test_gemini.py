"""Gemini CLI (the real `gemini`) against a real server: the settings that
`connect gemini --apply` writes connect once the folder is trusted, a wrong key fails, and the
session-start hook fires before the model call."""

from __future__ import annotations

import json
import re

from ..conftest import make_user
from ..support.model_recorder import ModelRecorder
from .conftest import Env, ToolCalls, save_marked_session

NO_MODEL = {
    "GEMINI_API_KEY": "dummy-not-a-key",
    "GEMINI_CLI_NO_RELAUNCH": "true",
    "GEMINI_TELEMETRY_ENABLED": "false",
}


def gemini(env: Env) -> str:
    return str(env.bin / "gemini")


def trust_folder(env: Env) -> None:
    """Gemini CLI disables MCP servers (and hooks) in untrusted folders; folder trust is on by
    default. Trusting the folder (the "Trust folder" prompt, or `/permissions`) stores this."""
    path = env.home / ".gemini" / "trustedFolders.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({str(env.project): "TRUST_FOLDER"}))


def sessionvault_line(out: str) -> str:
    return next((row for row in out.splitlines() if "sessionvault" in row and "http" in row), "")


def test_mcp_list_reports_the_server_connected(server, runtime, client_env: Env) -> None:
    user = make_user(runtime)
    client_env.connect("gemini", server.url, user.key, "--apply")
    trust_folder(client_env)
    done = client_env.run([gemini(client_env), "mcp", "list"], user.key, **NO_MODEL)
    out = done.stdout + done.stderr
    assert "Connected" in sessionvault_line(out) and "Disconnected" not in sessionvault_line(out), out


def test_mcp_list_with_a_wrong_key_reports_failure(server, runtime, client_env: Env) -> None:
    user = make_user(runtime)
    client_env.connect("gemini", server.url, user.key, "--apply")
    trust_folder(client_env)
    done = client_env.run([gemini(client_env), "mcp", "list"], "sv_live_" + "W" * 32, **NO_MODEL)
    out = done.stdout + done.stderr
    line = sessionvault_line(out)
    assert line and ("Disconnected" in line or "Connected" not in line), out


def test_the_session_start_hook_output_reaches_the_model(
    server, runtime, client_env: Env, model: ModelRecorder, tool_calls: ToolCalls
) -> None:
    """`gemini -p` runs the hook, and the saved session it printed (a unique marker) is in the
    request Gemini CLI sends to its model (GOOGLE_GEMINI_BASE_URL: the recorder)."""
    user = make_user(runtime)
    marker = save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("gemini", server.url, user.key, "--hooks")
    trust_folder(client_env)
    # Headless runs need an auth type picked; the dummy key never reaches a model.
    settings = client_env.home / ".gemini" / "settings.json"
    data = json.loads(settings.read_text())
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["command"].startswith("/")
    data["security"] = {"auth": {"selectedType": "gemini-api-key"}}
    settings.write_text(json.dumps(data, indent=2))
    seen, _ = client_env.until(
        [gemini(client_env), "-p", "hi"],
        user.key,
        lambda: model.saw(marker),
        timeout=90,
        GOOGLE_GEMINI_BASE_URL=model.base_url,
        **NO_MODEL,
    )
    assert tool_calls.calls("load_session", user.id), client_env.last_output  # the hook ran
    assert seen, f"{model.summary()}\n{client_env.last_output}"
    # The text offers load_session, and a headless run offers the model only tools that need no
    # confirmation: `connect --hooks` allowed SessionVault's reads, so they are there (before,
    # this run's model saw none of them), and its save and delete are not.
    offered = {n for body in model.bodies() for n in re.findall(r'"name":\s*"(mcp_sessionvault_\w+)"', body)}
    assert offered == {
        "mcp_sessionvault_load_session",
        "mcp_sessionvault_list_sessions",
        "mcp_sessionvault_search_sessions",
    }, model.summary()
