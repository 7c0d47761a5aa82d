"""OpenCode (the real `opencode`) against a real server: the `~/.config/opencode/opencode.json`
that `connect opencode --apply` writes connects (`opencode mcp list`), OpenCode fetches our
tools with the key, and a wrong key is reported as failed. `opencode mcp list` shows no tool
names, so the tools are seen on the server side: an authenticated `tools/list` from it."""

from __future__ import annotations

import json

from ..conftest import make_user
from ..support.model_recorder import ModelRecorder
from ..support.scripted_opencode import MODEL, PROVIDER, provider_config
from .conftest import Env, ToolCalls, save_marked_session

QUIET = {  # nothing from the network (there is none here), and no updates
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
}


def opencode(env: Env) -> str:
    return str(env.bin / "opencode")


def sessionvault_line(out: str) -> str:
    return next((row for row in out.splitlines() if " sessionvault" in row), "")


def test_mcp_list_reports_the_server_connected(
    server, runtime, client_env: Env, tool_calls: ToolCalls
) -> None:
    user = make_user(runtime)
    client_env.connect("opencode", server.url, user.key, "--apply")
    config = (client_env.home / ".config" / "opencode" / "opencode.json").read_text()
    assert "{env:SESSIONVAULT_API_KEY}" in config and user.key not in config
    done = client_env.run([opencode(client_env), "mcp", "list"], user.key, **QUIET)
    out = done.stdout + done.stderr
    line = sessionvault_line(out)
    assert done.returncode == 0 and "✓" in line and "connected" in line, out
    assert server.url in out, out
    assert [r for r in tool_calls.calls("tools/list", user.id) if getattr(r, "status", None) == 200], out


def test_mcp_list_with_a_wrong_key_is_not_connected_and_is_told_to_authenticate(
    server, runtime, client_env: Env, tool_calls: ToolCalls
) -> None:
    """The header really is sent: a wrong key gets the 401, whose OAuth challenge (RFC 9728)
    OpenCode 1.18 follows as far as it can without a browser: "needs authentication"."""
    user = make_user(runtime)
    client_env.connect("opencode", server.url, user.key, "--apply")
    done = client_env.run([opencode(client_env), "mcp", "list"], "sv_live_" + "W" * 32, **QUIET)
    out = done.stdout + done.stderr
    line = sessionvault_line(out)
    assert "connected" not in line and ("needs authentication" in line or "failed" in line), out
    reasons = {getattr(r, "auth_reason", None) for r in tool_calls.records}
    assert "unknown_key" in reasons and "missing" not in reasons, reasons  # the key was sent


def opencode_config(env: Env, base_url: str) -> None:
    """The scripted provider in ~/.config/opencode/opencode.json, beside what `connect` wrote
    there (its MCP entry)."""
    path = env.home / ".config" / "opencode" / "opencode.json"
    data = json.loads(path.read_text()) if path.exists() else {"$schema": "https://opencode.ai/config.json"}
    data["provider"] = provider_config(base_url)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def opencode_until(env: Env, key: str, model: ModelRecorder, text: str) -> bool:
    """`opencode run` against a recorder until `text` reached it (OpenCode retries a refused
    request: the run is stopped once the first request is in)."""
    opencode_config(env, model.base_url)
    argv = [opencode(env), "run", "-m", f"{PROVIDER}/{MODEL}", "Say hello."]
    seen, _ = env.until(argv, key, lambda: model.saw(text), timeout=120, **QUIET)
    return seen


def test_connect_hooks_writes_the_plugin_and_it_puts_the_saved_session_into_the_first_request(
    server, runtime, client_env: Env, tool_calls: ToolCalls
) -> None:
    """`connect opencode --hooks` (refused before: OpenCode had no hooks here) writes one plugin;
    OpenCode loads it, and its first model request carries the last session for this repo."""
    user = make_user(runtime)
    marker = save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("opencode", server.url, user.key, "--hooks")
    plugin = client_env.home / ".config" / "opencode" / "plugins" / "sessionvault.js"
    assert plugin.is_file() and "session.idle" in plugin.read_text()
    with ModelRecorder() as model:
        seen = opencode_until(client_env, user.key, model, marker)
        context = f"{model.summary()}\n{client_env.last_output}"
        assert seen and json.dumps(marker)[1:-1] in model.bodies()[0], context
    assert tool_calls.calls("load_session", user.id), context  # the plugin ran the hook
