"""Claude Code (the real `claude` CLI) against a real server: the `.mcp.json` that
`connect claude-code --apply` writes connects, a wrong key fails, the session-start hook fires,
and the Claude Desktop bridge entry starts as a stdio server."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sessionvault.local.setup import doctor
from sessionvault.names import KEY_ENV

from ..conftest import make_user
from ..support.model_recorder import ModelRecorder
from .conftest import Env, ToolCalls, save_marked_session


def claude(env: Env) -> str:
    return str(env.bin / "claude")


def approve_project_servers(env: Env) -> None:
    """Claude Code asks before it uses a project `.mcp.json` server ("Pending approval" until
    then); in a folder not yet trusted, the approval counts only from the user settings, so
    it goes where docs/clients.md says: `enabledMcpjsonServers` in ~/.claude/settings.json."""
    path = env.home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    data["enabledMcpjsonServers"] = ["sessionvault"]
    path.write_text(json.dumps(data, indent=2))


def test_mcp_list_reports_the_server_connected(server, runtime, client_env: Env) -> None:
    user = make_user(runtime)
    client_env.connect("claude-code", server.url, user.key, "--apply")
    assert (client_env.project / ".mcp.json").exists()
    approve_project_servers(client_env)
    done = client_env.run([claude(client_env), "mcp", "list"], user.key)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(row for row in done.stdout.splitlines() if row.startswith("sessionvault"))
    assert "Connected" in line and server.url in line, done.stdout
    # Without the approval the server stays unused: the step docs/clients.md tells users.
    (client_env.home / ".claude" / "settings.json").unlink()
    done = client_env.run([claude(client_env), "mcp", "list"], user.key)
    assert "Pending approval" in done.stdout, done.stdout


def test_mcp_list_from_a_subfolder_finds_the_repo_root_config(server, runtime, client_env: Env) -> None:
    user = make_user(runtime)
    sub = client_env.project / "src" / "pkg"
    sub.mkdir(parents=True)
    client_env.connect("claude-code", server.url, user.key, "--apply", cwd=sub)
    assert (client_env.project / ".mcp.json").exists() and not (sub / ".mcp.json").exists()
    approve_project_servers(client_env)
    done = client_env.run([claude(client_env), "mcp", "list"], user.key, cwd=client_env.project)
    assert "Connected" in next(row for row in done.stdout.splitlines() if row.startswith("sessionvault")), (
        done.stdout
    )


def test_mcp_list_with_a_wrong_key_reports_failure(server, runtime, client_env: Env) -> None:
    user = make_user(runtime)
    client_env.connect("claude-code", server.url, user.key, "--apply")
    approve_project_servers(client_env)
    done = client_env.run([claude(client_env), "mcp", "list"], "sv_live_" + "W" * 32)
    line = next(row for row in done.stdout.splitlines() if row.startswith("sessionvault"))
    assert "Connected" not in line, done.stdout


def test_the_session_start_hook_output_reaches_the_model(
    server, runtime, client_env: Env, model: ModelRecorder, tool_calls: ToolCalls
) -> None:
    """`claude -p` runs the hook, and the saved session it printed (a unique marker) is in the
    request Claude Code sends to its model (ANTHROPIC_BASE_URL: the recorder)."""
    user = make_user(runtime)
    marker = save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("claude-code", server.url, user.key, "--hooks")
    hook = json.loads((client_env.home / ".claude" / "settings.json").read_text())["hooks"]["SessionStart"]
    assert hook[0]["hooks"][0]["command"].startswith("/")  # absolute: the client PATH has no venv
    approve_project_servers(client_env)
    seen, _ = client_env.until(
        [claude(client_env), "-p", "hi"],
        user.key,
        lambda: model.saw(marker),
        timeout=90,
        ANTHROPIC_BASE_URL=model.base_url,
        ANTHROPIC_API_KEY="sk-ant-dummy-not-a-key",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        CLAUDE_CODE_MAX_RETRIES="0",
        API_TIMEOUT_MS="3000",
    )
    assert tool_calls.calls("load_session", user.id), client_env.last_output  # the hook ran
    assert seen, f"{model.summary()}\n{client_env.last_output}"


def test_the_claude_desktop_bridge_entry_starts_as_a_stdio_server(server, runtime, client_env: Env) -> None:
    """The exact entry `connect claude-desktop` writes, added to Claude Code with add-json:
    the stdio bridge starts from a PATH without the venv and connects."""
    user = make_user(runtime)
    client_env.connect("claude-desktop", server.url, user.key, "--apply", "--key", user.key)
    desktop = client_env.home / ".config" / "Claude" / "claude_desktop_config.json"
    entry = json.loads(desktop.read_text())["mcpServers"]["sessionvault"]
    assert Path(entry["command"]).is_absolute()
    added = client_env.run(
        [claude(client_env), "mcp", "add-json", "--scope", "user", "sessionvault-desktop", json.dumps(entry)],
        None,
    )
    assert added.returncode == 0, added.stdout + added.stderr
    done = client_env.run([claude(client_env), "mcp", "list"], None)
    line = next(row for row in done.stdout.splitlines() if row.startswith("sessionvault-desktop"))
    assert "Connected" in line, done.stdout


@pytest.mark.parametrize("scope", ["user", "local"])
def test_doctor_agrees_with_claude_mcp_list_after_claude_mcp_add(
    server, runtime, client_env: Env, scope: str
) -> None:
    """The banner's `claude mcp add` (local scope by default, or --scope user) writes
    ~/.claude.json: `claude mcp list` says Connected, and so must doctor (issue 37)."""
    user = make_user(runtime)
    added = client_env.run(
        [
            claude(client_env),
            "mcp",
            "add",
            "--scope",
            scope,
            "--transport",
            "http",
            "sessionvault",
            server.url,
            "--header",
            f"Authorization: Bearer {user.key}",
        ],
        user.key,
    )
    assert added.returncode == 0, added.stdout + added.stderr
    listed = client_env.run([claude(client_env), "mcp", "list"], user.key)
    assert "Connected" in next(r for r in listed.stdout.splitlines() if r.startswith("sessionvault")), (
        listed.stdout
    )
    out = io.StringIO()
    code = doctor.run(
        server.url, env={KEY_ENV: user.key}, home=client_env.home, cwd=client_env.project, out=out
    )
    where = "user scope" if scope == "user" else f"local scope, {client_env.project}"
    assert code == 0 and f"✓ Claude Code: ~/.claude.json ({where}) -> {server.url}" in out.getvalue(), (
        out.getvalue()
    )
