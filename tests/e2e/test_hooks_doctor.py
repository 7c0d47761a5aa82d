"""End to end: the session-start hook and `sessionvault doctor` against the real running server."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sessionvault import names
from sessionvault.core import records
from sessionvault.local.hook import session_start as context
from sessionvault.local.hook.repo import current_repo
from sessionvault.local.setup import doctor, files, hooks

from ..conftest import free_port, make_user


@pytest.fixture(autouse=True)
def _isolated(isolated_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(names.URL_ENV, raising=False)
    monkeypatch.delenv(names.KEY_ENV, raising=False)
    # Backups of the configs these tests change go to the state folder: not the real one.
    monkeypatch.setenv(names.HOME_ENV, str(isolated_git / "state"))


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git checkout with an origin remote, as the cwd a client starts in."""
    path = tmp_path / "shop"
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(
        ["git", "-C", str(path), "remote", "add", "origin", "git@github.com:acme/shop-hooks.git"], check=True
    )
    return path


def run_hook(url: str, key: str, cwd: Path, client: str = "claude-code") -> str:
    """`sessionvault hook session-start` as the client runs it: a process in the checkout.

    A subprocess rather than capsys: the in-process server's logger would otherwise bind to a
    capture stream that is closed when the test ends.
    """
    argv = ["session-start", "--client", client, "--url", url]
    code = f"from sessionvault.cli.hook import main; raise SystemExit(main({argv!r}))"
    env = {**os.environ, names.KEY_ENV: key}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=30
    )
    assert done.returncode == 0 and done.stderr == ""
    out = json.loads(done.stdout)
    assert list(out) == ["hookSpecificOutput"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return out["hookSpecificOutput"]["additionalContext"]


def test_the_hook_hands_over_the_latest_session_of_this_repo(server, runtime, checkout) -> None:
    user = make_user(runtime)
    repo = current_repo(checkout)
    assert repo == "github.com/acme/shop-hooks"
    save = {
        "name": "hooks-handoff",
        "repo": repo,
        "summary": "Payment service extracted; receipts still inline",
        "decisions": [{"decision": "keep receipts inline", "reason": "one caller only"}],
        "todos": ["move receipts out"],
        "files": ["src/payment.py"],
        "tried": ["celery for receipts: too heavy"],
        "client": "cursor",
    }
    runtime.vault.save(user.principal, records.parse(records.SaveArgs, save))
    other = {"name": "elsewhere", "repo": "github.com/acme/other", "summary": "not this repo"}
    runtime.vault.save(user.principal, records.parse(records.SaveArgs, other))

    for client in ("claude-code", "codex", "gemini"):
        text = run_hook(server.url, user.key, checkout, client)
        assert text.startswith("## SessionVault: last session for `github.com/acme/shop-hooks`")
        assert "**hooks-handoff** v1, saved by cursor at " in text
        assert "**Summary:** Payment service extracted; receipts still inline" in text
        for part in ("keep receipts inline (why: one caller only)", "move receipts out", "src/payment.py"):
            assert part in text
        assert "celery for receipts: too heavy" in text
        assert "not this repo" not in text and len(text) <= context.CONTEXT_CAP


def test_a_repo_without_sessions_gets_a_nudge_to_save(server, user, checkout) -> None:
    out = json.loads(context.session_start("gemini", server.url, cwd=checkout, env={names.KEY_ENV: user.key}))
    text = out["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("SessionVault: no saved session for repo `github.com/acme/shop-hooks` yet")


def test_a_wrong_key_is_a_note_and_exit_0(server, checkout) -> None:
    text = run_hook(server.url, "sv_live_" + "A" * 32, checkout)
    assert text == (
        f"SessionVault: the server at {server.url} refused the API key in SESSIONVAULT_API_KEY (401); "
        "run `sessionvault doctor`."
    )


# --- doctor -------------------------------------------------------------------------------


def run_doctor(url: str, key: str | None, home: Path, cwd: Path) -> tuple[int, str]:
    out = io.StringIO()
    env = {names.KEY_ENV: key} if key else {}
    code = doctor.run(url, env=env, home=home, cwd=cwd, out=out)
    return code, out.getvalue()


def test_doctor_passes_only_with_a_client_pointing_at_this_server(server, user, tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    cwd.mkdir()
    health = server.url.replace("/mcp", "/health")

    code, out = run_doctor(server.url, user.key, home, cwd)
    assert code == 1
    assert f"✓ server reachable at {health}" in out
    assert f"✓ SESSIONVAULT_API_KEY is set ({user.key[:12]}...)" in out
    assert "✓ the server accepts the key" in out
    assert "✗ no client is configured to use SessionVault" in out
    assert f"fix: sessionvault connect claude-code --apply --url {server.url}" in out

    files.apply("cursor", server.url, None, use_env=True, home=home, cwd=cwd)
    code, out = run_doctor(server.url, user.key, home, cwd)
    assert code == 0, out
    assert f"✓ Cursor: ~/.cursor/mcp.json -> {server.url}" in out
    assert "· not configured: claude-code, claude-desktop, vscode" in out
    assert out.rstrip().endswith("all good")

    files.apply("gemini", "http://127.0.0.1:1/mcp", None, use_env=True, home=home, cwd=cwd)
    code, out = run_doctor(server.url, user.key, home, cwd)
    assert code == 1
    assert f"✗ Gemini CLI: ~/.gemini/settings.json points to http://127.0.0.1:1/mcp, not {server.url}" in out
    assert f"fix: sessionvault connect gemini --apply --url {server.url}" in out
    assert "· Gemini CLI: no session-start hook" in out  # a tip: hooks are optional

    files.apply("gemini", server.url, None, use_env=True, home=home, cwd=cwd)
    hooks.install_hooks("gemini", home=home, cwd=cwd)
    code, out = run_doctor(server.url, user.key, home, cwd)
    assert code == 0, out
    assert "✓ Gemini CLI: session-start hook installed in ~/.gemini/settings.json" in out
    assert (
        "· Gemini CLI: no automatic checkpoints when work ends (sessionvault connect gemini --hooks)" in out
    )
    hooks.install_checkpoint_hooks("gemini", home=home, cwd=cwd)
    code, out = run_doctor(server.url, user.key, home, cwd)
    assert code == 0 and "✓ Gemini CLI: automatic checkpoints on AfterAgent, SessionEnd" in out, out


def test_doctor_names_the_fix_for_a_missing_or_refused_key(server, tmp_path: Path) -> None:
    files.apply("cursor", server.url, None, use_env=True, home=tmp_path, cwd=tmp_path)
    code, out = run_doctor(server.url, None, tmp_path, tmp_path)
    assert code == 1
    assert "✗ SESSIONVAULT_API_KEY is not set\n    fix: export SESSIONVAULT_API_KEY=sv_live_..." in out

    code, out = run_doctor(server.url, "sv_live_" + "B" * 32, tmp_path, tmp_path)
    assert code == 1
    assert "✗ the server refuses the key" in out
    assert "fix: sessionvault key create --label laptop" in out


def test_doctor_with_the_server_down(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    code, out = run_doctor(url, "sv_live_" + "C" * 32, tmp_path, tmp_path)
    assert code == 1
    assert f"✗ server not reachable at http://127.0.0.1:{port}/health" in out
    assert f"fix: sessionvault dev --port {port}" in out
    assert "accepts the key" not in out and "refuses the key" not in out


def test_doctor_runs_the_command_each_hook_and_bridge_entry_will_run(server, user, tmp_path: Path) -> None:
    """A hook naming a bare `sessionvault` fails in a client whose PATH lacks the venv (exit 127):
    the doctor runs the command the hook names, and fails it when it does not resolve."""
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir(parents=True)
    files.apply("claude-code", server.url, None, use_env=True, home=home, cwd=cwd)
    hooks.install_hooks("claude-code", home=home, cwd=cwd, url=server.url)
    approve_in_claude_code(home, cwd)
    code, out = run_doctor(server.url, user.key, home, cwd)
    assert code == 0, out
    assert "✓ Claude Code: the hook command `/" in out  # an absolute path, and it runs

    settings = home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    gone = tmp_path / "old-venv" / "bin" / "sessionvault"
    data["hooks"]["SessionStart"][0]["hooks"][0]["command"] = (
        f"{gone} hook session-start --client claude-code"
    )
    settings.write_text(json.dumps(data))
    code, out = run_doctor(server.url, user.key, home, cwd)
    assert code == 1
    assert f"✗ Claude Code: the hook command does not run: {gone}: not found" in out
    assert "fix: sessionvault connect claude-code --hooks" in out

    files.apply("claude-desktop", server.url, user.key, use_env=True, home=home, cwd=cwd)
    code, out = run_doctor(server.url, user.key, home, cwd)
    assert "✓ Claude Desktop: the bridge command `/" in out
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"
    data = json.loads(desktop.read_text())
    data["mcpServers"]["sessionvault"]["command"] = str(tmp_path / "gone" / "sessionvault")
    desktop.write_text(json.dumps(data))
    code, out = run_doctor(server.url, user.key, home, cwd)
    assert "✗ Claude Desktop: the bridge command does not run" in out
    assert f"fix: sessionvault connect claude-desktop --apply --url {server.url}" in out


def approve_in_claude_code(home: Path, folder: Path, answer: str = "enabledMcpjsonServers") -> None:
    """What Claude Code records in ~/.claude.json when the user answers its prompt for a
    project's .mcp.json server ("Use this MCP server" / "Continue without")."""
    state = home / ".claude.json"
    data = json.loads(state.read_text()) if state.exists() else {"numStartups": 3}
    data.setdefault("projects", {})[str(folder)] = {"hasTrustDialogAccepted": True, answer: ["sessionvault"]}
    state.write_text(json.dumps(data))


def test_doctor_says_what_to_do_while_claude_code_has_not_approved_the_server(
    server, user, tmp_path: Path
) -> None:
    """`claude mcp list` shows a project's .mcp.json server "Pending approval" until the user
    approves it: doctor must not say "all good" then, and it finds the projects Claude Code
    knows from any folder."""
    home, project, elsewhere = tmp_path / "home", tmp_path / "home" / "shop", tmp_path / "elsewhere"
    project.mkdir(parents=True)
    elsewhere.mkdir()
    files.apply("claude-code", server.url, None, use_env=True, home=home, cwd=project)

    code, out = run_doctor(server.url, user.key, home, project)
    assert code == 1, out
    assert f"✓ Claude Code: ~/shop/.mcp.json -> {server.url}" in out
    assert (
        '✗ Claude Code: the server in ~/shop/.mcp.json is "Pending approval" (not approved yet) in ~/shop'
        in out
    )
    assert f'fix: cd {project} && claude, and choose "Use this MCP server"' in out
    assert "all good" not in out

    # Run from another folder: the project Claude Code knows is found, and still pending.
    approve_in_claude_code(home, tmp_path / "unrelated")  # ~/.claude.json exists, project unknown
    code, out = run_doctor(server.url, user.key, home, elsewhere)
    assert code == 1 and "✗ no client is configured" in out, out  # the project is not known yet
    assert "check one with sessionvault doctor --project DIR" in out

    approve_in_claude_code(home, project, "disabledMcpjsonServers")
    code, out = run_doctor(server.url, user.key, home, elsewhere)
    assert code == 1, out
    assert "✗ Claude Code: the server in ~/shop/.mcp.json was rejected in ~/shop" in out
    assert "claude mcp reset-project-choices" in out

    approve_in_claude_code(home, project)
    for cwd in (project, elsewhere):
        code, out = run_doctor(server.url, user.key, home, cwd)
        assert code == 0, out
        assert "✓ Claude Code: the server is approved in ~/shop" in out
        assert out.rstrip().endswith("all good")


def claude_added(home: Path, project: Path, user_url: str, local_url: str) -> None:
    """The ~/.claude.json a real `claude mcp add` wrote (local scope, then --scope user;
    tests/fixtures/claude_code/), with this test's project and URLs."""
    text = (Path(__file__).parents[1] / "fixtures" / "claude_code" / "claude.json").read_text()
    data = json.loads(text.replace("PROJECT", str(project)))
    data["mcpServers"]["sessionvault"]["url"] = user_url
    data["projects"][str(project)]["mcpServers"]["sessionvault"]["url"] = local_url
    home.mkdir(parents=True, exist_ok=True)
    (home / ".claude.json").write_text(json.dumps(data))


def test_doctor_reads_the_servers_claude_mcp_add_wrote_in_the_user_and_local_scopes(
    server, user, tmp_path: Path
) -> None:
    """After the banner's `claude mcp add`, `claude mcp list` says Connected: doctor must not say
    no client is configured (issue 37). Neither scope waits for an approval."""
    home, project = tmp_path / "home", tmp_path / "home" / "shop"
    project.mkdir(parents=True)
    claude_added(home, project, user_url=server.url, local_url=server.url)
    code, out = run_doctor(server.url, user.key, home, tmp_path)
    assert code == 0, out
    assert f"✓ Claude Code: ~/.claude.json (user scope) -> {server.url}" in out
    assert f"✓ Claude Code: ~/.claude.json (local scope, ~/shop) -> {server.url}" in out
    assert "no client is configured" not in out and "Pending approval" not in out

    # A .mcp.json not approved yet beside them: Claude Code uses the added one (as `claude mcp
    # list` shows, tried with 2.1.332), so it is a tip, not a problem.
    files.apply("claude-code", server.url, None, use_env=True, home=home, cwd=project)
    code, out = run_doctor(server.url, user.key, home, tmp_path)
    assert code == 0, out
    assert (
        '· Claude Code: the server in ~/shop/.mcp.json is "Pending approval" (not approved yet) in ~/shop;'
        " it uses the one in ~/.claude.json" in out
    )

    claude_added(home, project, user_url=server.url, local_url="http://127.0.0.1:1/mcp")
    code, out = run_doctor(server.url, user.key, home, tmp_path)
    assert code == 1, out
    assert (
        "✗ Claude Code: ~/.claude.json (local scope, ~/shop) points to http://127.0.0.1:1/mcp,"
        f" not {server.url}" in out
    )
    assert f"fix: cd {project} && claude mcp remove --scope local sessionvault && sessionvault connect" in out
