"""Installing the session-start hook into each client's settings, safely and idempotently."""

from __future__ import annotations

import json
import stat
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from sessionvault.errors import ConfigFileError
from sessionvault.local.hook import session_start as context
from sessionvault.local.setup import files, hooks

from ..conftest import SV

T1 = datetime(2026, 1, 2, 3, 4, 5)
T2 = datetime(2026, 1, 2, 3, 4, 9)
HOOK_FILES = {
    "claude-code": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "qwen": ".qwen/settings.json",
    "droid": ".factory/settings.json",
}
GROUPED = [c for c in hooks.HOOK_CLIENTS if hooks.HOOK_CLIENTS[c].matcher is not None]
Q_AGENT = ".aws/amazonq/cli-agents/q_cli_default.json"


def session_start_groups(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["hooks"]["SessionStart"]


FLAT = {"amazon-q", "copilot-cli"}  # each event a flat list of hook entries, no matcher groups
COPILOT_HOOKS = ".copilot/hooks/sessionvault.json"


def test_every_client_with_a_hook_is_grouped_flat_or_of_its_own_kind() -> None:
    own_kind = {c for c, spec in hooks.HOOK_CLIENTS.items() if spec.kind}
    assert sorted(GROUPED) == sorted(HOOK_FILES)
    assert set(hooks.HOOK_CLIENTS) == {*HOOK_FILES, *FLAT, *own_kind}


@pytest.mark.parametrize("client", GROUPED)
def test_install_writes_the_documented_entry(client: str, tmp_path: Path) -> None:
    result = hooks.install_hooks(client, home=tmp_path, cwd=tmp_path / "project", now=T1)
    path = tmp_path / HOOK_FILES[client]
    assert result.path == path and result.changed and result.backup is None
    [group] = session_start_groups(path)
    [hook] = group["hooks"]
    assert hook["type"] == "command"
    assert hook["command"] == f"{SV} hook session-start --client {client}"
    expected = {
        "claude-code": ("startup|clear", {"timeout": 5}),
        "codex": ("startup|clear", {"timeout": 5}),
        "gemini": ("startup", {"timeout": 5000, "name": "sessionvault"}),
        "qwen": ("startup", {"timeout": 5, "name": "sessionvault"}),  # seconds, unlike Gemini
        "droid": ("startup|clear", {"timeout": 5}),  # Claude Code's shape
    }[client]
    assert group["matcher"] == expected[0]
    assert expected[1].items() <= hook.items()
    assert hooks.hook_installed(client, home=tmp_path, cwd=tmp_path)


@pytest.mark.parametrize("client", GROUPED)
def test_install_is_idempotent_keeps_other_settings_and_backs_up(client: str, tmp_path: Path) -> None:
    path = tmp_path / HOOK_FILES[client]
    path.parent.mkdir(parents=True)
    theirs = {"type": "command", "command": "echo hello"}
    original = {
        "model": "opus",
        "mcpServers": {"other": {"url": "http://other"}},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [theirs]}],
            "SessionStart": [{"matcher": "startup", "hooks": [theirs]}],
        },
    }
    text = json.dumps(original, indent=4) + "\n"
    path.write_text(text)
    path.chmod(0o640)

    first = hooks.install_hooks(client, home=tmp_path, cwd=tmp_path, now=T1)
    # The backup is in the state folder, not beside the file (files.Backups).
    backup = hooks.files.backup_folder() / "20260102-030405" / path.relative_to("/")
    assert first.changed and first.backup == backup
    assert first.backup.read_text() == text
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    after = json.loads(path.read_text())
    assert {k: v for k, v in after.items() if k != "hooks"} == {
        k: v for k, v in original.items() if k != "hooks"
    }
    assert after["hooks"]["PreToolUse"] == original["hooks"]["PreToolUse"]
    groups = after["hooks"]["SessionStart"]
    assert groups[0] == {"matcher": "startup", "hooks": [theirs]}
    assert len(groups) == 2 and hooks._is_ours(groups[1]["hooks"][0])
    assert '\n    "model": "opus"' in path.read_text()  # the file's own indentation is kept

    written = path.read_text()
    second = hooks.install_hooks(client, home=tmp_path, cwd=tmp_path, now=T2)
    assert (second.changed, second.backup) == (False, None)
    assert path.read_text() == written
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_a_changed_url_replaces_the_old_hook_instead_of_adding_one(tmp_path: Path) -> None:
    path = tmp_path / HOOK_FILES["claude-code"]
    path.parent.mkdir(parents=True)
    old_ours = {"type": "command", "command": "/opt/bin/sessionvault hook session-start --client claude-code"}
    theirs = {"type": "command", "command": "echo hello"}
    path.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [theirs, old_ours]}]}}))

    url = "https://vault.example.com/mcp"
    result = hooks.install_hooks("claude-code", home=tmp_path, cwd=tmp_path, now=T1, url=url)
    assert result.changed
    groups = session_start_groups(path)
    assert groups[0] == {"hooks": [theirs]}  # their hook stays, our old one is gone
    assert groups[1]["hooks"][0]["command"] == (
        f"{SV} hook session-start --client claude-code --url https://vault.example.com/mcp"
    )
    assert not hooks.install_hooks("claude-code", home=tmp_path, cwd=tmp_path, now=T2, url=url).changed


def test_a_symlinked_settings_file_is_edited_through_the_link(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text('{"theme": "dark"}\n')
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    hooks.install_hooks("claude-code", home=tmp_path, cwd=tmp_path, now=T1)
    assert link.is_symlink()
    assert json.loads(real.read_text())["theme"] == "dark"
    assert hooks.hook_installed("claude-code", home=tmp_path, cwd=tmp_path)


def test_a_malformed_hooks_section_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / HOOK_FILES["gemini"]
    path.parent.mkdir(parents=True)
    path.write_text('{"hooks": {"SessionStart": "nope"}}')
    with pytest.raises(ConfigFileError, match="SessionStart"):
        hooks.install_hooks("gemini", home=tmp_path, cwd=tmp_path, now=T1)
    assert path.read_text() == '{"hooks": {"SessionStart": "nope"}}'
    assert list(path.parent.iterdir()) == [path]
    assert not hooks.hook_installed("gemini", home=tmp_path, cwd=tmp_path)


def test_clients_without_a_session_start_hook_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="no session-start hook"):
        hooks.install_hooks("cursor", home=tmp_path, cwd=tmp_path)
    assert not any(tmp_path.iterdir())


def test_amazon_q_gets_an_agent_spawn_hook_in_a_default_agent_that_keeps_the_built_in_one(
    tmp_path: Path,
) -> None:
    """No q_cli_default.json yet: it is created with the built-in default agent's documented
    fields (so `q chat` keeps its tools, resources and ~/.aws/amazonq/mcp.json) plus our hook."""
    result = hooks.install_hooks("amazon-q", home=tmp_path, cwd=tmp_path / "project", now=T1)
    path = tmp_path / Q_AGENT
    assert result.path == path and result.changed and result.backup is None
    agent = json.loads(path.read_text())
    assert agent["name"] == "q_cli_default" and agent["useLegacyMcpJson"] is True
    assert agent["tools"] == ["*"] and agent["allowedTools"] == ["fs_read"]
    assert "file://README.md" in agent["resources"]
    assert agent["hooks"] == {
        "agentSpawn": [{"command": f"{SV} hook session-start --client amazon-q", "timeout_ms": 5000}]
    }
    assert hooks.hook_installed("amazon-q", home=tmp_path, cwd=tmp_path)
    written = path.read_text()
    again = hooks.install_hooks("amazon-q", home=tmp_path, cwd=tmp_path, now=T2)
    assert (again.changed, again.backup) == (False, None) and path.read_text() == written


def test_amazon_q_an_existing_default_agent_keeps_its_fields_and_hooks(tmp_path: Path) -> None:
    path = tmp_path / Q_AGENT
    path.parent.mkdir(parents=True)
    theirs = {"command": "git status --short"}
    old_ours = {"command": "/old/venv/bin/sessionvault hook session-start --client amazon-q"}
    mine = {
        "name": "q_cli_default",
        "tools": ["fs_read"],
        "hooks": {"agentSpawn": [theirs, old_ours], "stop": [{"command": "date"}]},
    }
    path.write_text(json.dumps(mine))
    result = hooks.install_hooks("amazon-q", home=tmp_path, cwd=tmp_path, now=T1)
    assert result.changed and result.backup is not None
    agent = json.loads(path.read_text())
    assert agent["tools"] == ["fs_read"] and "useLegacyMcpJson" not in agent  # theirs, untouched
    assert agent["hooks"]["stop"] == [{"command": "date"}]
    assert agent["hooks"]["agentSpawn"] == [
        theirs,
        {"command": f"{SV} hook session-start --client amazon-q", "timeout_ms": 5000},
    ]  # the old one of ours replaced, not doubled


def test_the_amazon_q_hook_prints_the_context_itself_not_json() -> None:
    """Amazon Q puts an agentSpawn hook's stdout into the context verbatim: markdown, no JSON."""
    out = context.session_start("amazon-q", env={})
    assert out.startswith("SessionVault: SESSIONVAULT_API_KEY is not set"), out
    assert (
        json.loads(context.session_start("claude-code", env={}))["hookSpecificOutput"]["additionalContext"]
        == out
    )


END_EVENTS = {
    "claude-code": ({"Stop", "PreCompact", "SessionEnd"}, {"timeout": 20}),
    "codex": ({"Stop", "PreCompact", "SessionEnd"}, {"timeout": 20}),
    "gemini": ({"AfterAgent", "SessionEnd"}, {"timeout": 20000, "name": "sessionvault-checkpoint"}),
    "qwen": ({"Stop", "PreCompact", "SessionEnd"}, {"timeout": 20, "name": "sessionvault-checkpoint"}),
    "droid": ({"Stop", "PreCompact", "SessionEnd"}, {"timeout": 20}),
}


@pytest.mark.parametrize("client", sorted(END_EVENTS))
def test_the_checkpoint_hook_goes_on_each_end_of_work_event_once(client: str, tmp_path: Path) -> None:
    path = tmp_path / HOOK_FILES[client]
    path.parent.mkdir(parents=True)
    theirs = {"hooks": [{"type": "command", "command": "notify-send done"}]}
    path.write_text(json.dumps({"hooks": {"Stop": [theirs]}, "theme": "dark"}))
    events, extra = END_EVENTS[client]
    first = hooks.install_checkpoint_hooks(client, home=tmp_path, cwd=tmp_path, now=T1)
    assert [(r.path, r.changed) for r in first] == [(path, True)]  # every event in one write
    data = json.loads(path.read_text())
    assert data["theme"] == "dark" and set(data["hooks"]) >= events
    for event in events:
        [ours] = [g for g in data["hooks"][event] if g != theirs]
        [hook] = ours["hooks"]
        assert hook["command"] == f"{SV} hook checkpoint --client {client}" and extra.items() <= hook.items()
        assert "matcher" not in ours or event == "PreCompact"
    if "Stop" in events:
        assert theirs in data["hooks"]["Stop"]  # the user's own Stop hook stays
    assert set(hooks.checkpoint_events(client, home=tmp_path, cwd=tmp_path)) == events
    again = hooks.install_checkpoint_hooks(client, home=tmp_path, cwd=tmp_path, now=T2)
    assert not any(r.changed for r in again)


def test_amazon_q_has_no_end_of_work_event_to_hook() -> None:
    assert hooks.install_checkpoint_hooks("amazon-q", home=Path("/nonexistent"), cwd=Path("/")) == []


def test_copilot_cli_gets_a_hooks_file_of_its_own_with_flat_entries(tmp_path: Path) -> None:
    """~/.copilot/hooks/sessionvault.json, {"version": 1, "hooks": ...}: SessionStart and the
    end-of-work events (PascalCase: their input is Claude Code's snake_case), each a flat list of
    {"type": "command", "bash": ..., "timeoutSec": ...}; the user's own entries stay."""
    result = hooks.install_hooks("copilot-cli", home=tmp_path, cwd=tmp_path / "project", now=T1)
    path = tmp_path / COPILOT_HOOKS
    assert result.path == path and result.changed and result.backup is None
    ends = hooks.install_checkpoint_hooks("copilot-cli", home=tmp_path, cwd=tmp_path, now=T1)
    assert [r.changed for r in ends] == [True]
    start = {"type": "command", "bash": f"{SV} hook session-start --client copilot-cli", "timeoutSec": 5}
    end = {"type": "command", "bash": f"{SV} hook checkpoint --client copilot-cli", "timeoutSec": 20}
    assert json.loads(path.read_text()) == {
        "version": 1,
        "hooks": {"SessionStart": [start], "Stop": [end], "PreCompact": [end], "SessionEnd": [end]},
    }
    assert hooks.hook_installed("copilot-cli", home=tmp_path, cwd=tmp_path)
    assert hooks.checkpoint_events("copilot-cli", home=tmp_path, cwd=tmp_path) == [
        "Stop",
        "PreCompact",
        "SessionEnd",
    ]
    data = json.loads(path.read_text())
    theirs = {"type": "command", "bash": "date >> ~/starts.log"}
    data["hooks"]["SessionStart"].insert(0, theirs)
    path.write_text(json.dumps(data))
    again = hooks.install_hooks("copilot-cli", home=tmp_path, cwd=tmp_path, now=T2)
    assert not again.changed and json.loads(path.read_text())["hooks"]["SessionStart"] == [theirs, start]
    assert not any(
        r.changed for r in hooks.install_checkpoint_hooks("copilot-cli", home=tmp_path, cwd=tmp_path)
    )


@pytest.mark.parametrize("client", sorted(hooks.HOOK_CLIENTS))
def test_connect_writes_each_hook_file_once_and_backs_up_only_what_was_there(
    client: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`connect --hooks` (`hooks.install`, in one backup run): every file it touches is written
    once; a file it created has no backup (found: Copilot CLI's hooks file written twice, the
    backup holding our own first half); a file the user had is backed up once, as it was."""
    monkeypatch.setenv("SESSIONVAULT_HOME", str(tmp_path / "state"))
    writes: list[Path] = []
    real_write = files.write_atomic

    def counted(path: Path, text: str, mode: int) -> None:
        writes.append(path)
        real_write(path, text, mode)

    monkeypatch.setattr(files, "write_atomic", counted)
    with files.one_run(home=tmp_path):
        first = hooks.install(client, home=tmp_path, cwd=tmp_path / "project")
    paths = [r.path.resolve() for r in first]
    assert sorted(writes) == sorted(paths) and len(set(paths)) == len(paths), writes
    assert all(r.changed and r.backup is None for r in first)
    assert not (tmp_path / "state" / "backups").exists()
    writes.clear()
    with files.one_run(home=tmp_path):
        again = hooks.install(client, home=tmp_path, cwd=tmp_path / "project")
    assert writes == [] and not any(r.changed for r in again)


def test_a_users_own_settings_file_is_backed_up_once_as_they_left_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSIONVAULT_HOME", str(tmp_path / "state"))
    path = tmp_path / HOOK_FILES["claude-code"]
    path.parent.mkdir(parents=True)
    theirs = '{"theme": "dark"}\n'
    path.write_text(theirs)
    with files.one_run(home=tmp_path):
        [result] = hooks.install("claude-code", home=tmp_path, cwd=tmp_path)
    assert result.backup is not None and result.backup.read_text() == theirs
    assert [p for p in (tmp_path / "state" / "backups").rglob("*") if p.is_file()] == [result.backup]


def test_the_copilot_cli_hook_prints_a_flat_additional_context() -> None:
    """Copilot CLI 1.0.102 hands a SessionStart hook's top-level `additionalContext` to the model;
    Claude Code's nested hookSpecificOutput did not reach it (a real run, tests/clients)."""
    out = json.loads(context.session_start("copilot-cli", env={}))
    assert set(out) == {"additionalContext"} and out["additionalContext"].startswith("SessionVault: ")


def test_cline_gets_a_plugin_rule_and_one_script_per_end_of_work_event(tmp_path: Path) -> None:
    """Cline's CLI: a plugin whose rule runs the session-start hook (its TaskStart hook's output
    never reaches the model), and TaskComplete.sh / PreCompact.sh / SessionShutdown.sh; written
    again only when they differ, never over a file of the same name that is not ours."""
    plugin = tmp_path / ".cline" / "plugins" / "sessionvault.js"
    assert hooks.install_hooks("cline-cli", home=tmp_path, cwd=tmp_path).path == plugin
    ends = hooks.install_checkpoint_hooks("cline-cli", home=tmp_path, cwd=tmp_path)
    scripts = [
        tmp_path / ".cline" / "hooks" / f"{e}.sh" for e in ("TaskComplete", "PreCompact", "SessionShutdown")
    ]
    assert [r.path for r in ends] == scripts and all(r.changed for r in ends)
    assert (
        f'const COMMAND = ["{SV}", "hook", "session-start", "--client", "cline-cli"];' in plugin.read_text()
    )
    assert scripts[0].read_text().endswith(f"\nexec {SV} hook checkpoint --client cline-cli\n")
    assert all(stat.S_IMODE(s.stat().st_mode) == 0o755 for s in scripts)
    assert hooks.installed_commands("cline-cli", home=tmp_path, cwd=tmp_path) == [
        f"{SV} hook session-start --client cline-cli"
    ]
    assert hooks.checkpoint_events("cline-cli", home=tmp_path, cwd=tmp_path) == [
        "TaskComplete",
        "PreCompact",
        "SessionShutdown",
    ]
    assert not hooks.install_hooks("cline-cli", home=tmp_path, cwd=tmp_path).changed
    assert hooks.install_hooks("cline-cli", home=tmp_path, cwd=tmp_path, url="http://h:1/mcp").changed
    scripts[1].write_text("#!/bin/sh\necho mine\n")
    with pytest.raises(ConfigFileError, match="not SessionVault's"):
        hooks.install_checkpoint_hooks("cline-cli", home=tmp_path, cwd=tmp_path)
    assert scripts[1].read_text() == "#!/bin/sh\necho mine\n"
    assert hooks.checkpoint_events("cline-cli", home=tmp_path, cwd=tmp_path) == [
        "TaskComplete",
        "SessionShutdown",
    ]


def test_kilo_code_gets_one_plugin_for_the_start_and_the_checkpoint(tmp_path: Path) -> None:
    plugin = tmp_path / ".config" / "kilo" / "plugins" / "sessionvault.js"
    assert hooks.install_hooks("kilo-code", home=tmp_path, cwd=tmp_path).path == plugin
    [end] = hooks.install_checkpoint_hooks("kilo-code", home=tmp_path, cwd=tmp_path)
    assert end.path == plugin and not end.changed
    text = plugin.read_text()
    assert '"experimental.chat.system.transform"' in text and 'event?.type !== "session.idle"' in text
    assert f'const CHECKPOINT = ["{SV}", "hook", "checkpoint", "--client", "kilo-code"];' in text
    assert hooks.hook_installed("kilo-code", home=tmp_path, cwd=tmp_path)
    assert hooks.checkpoint_events("kilo-code", home=tmp_path, cwd=tmp_path) == ["session.idle"]
    assert hooks.checkpoint_events("kilo-code", home=tmp_path / "none", cwd=tmp_path) == []


def test_gemini_gets_its_read_tools_allowed_so_a_headless_run_offers_them(tmp_path: Path) -> None:
    """`gemini -p` offers the model no tool that needs a confirmation (a real run, tests/clients):
    `connect gemini --hooks` allows SessionVault's three reads in the same write as the hooks,
    keeping the user's own entries; saves and deletes still ask."""
    path = tmp_path / HOOK_FILES["gemini"]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"tools": {"allowed": ["run_shell_command(git status)"]}}))
    [result] = hooks.install("gemini", home=tmp_path, cwd=tmp_path)
    allowed = json.loads(path.read_text())["tools"]["allowed"]
    assert result.changed and allowed == [
        "run_shell_command(git status)",
        "mcp_sessionvault_load_session",
        "mcp_sessionvault_list_sessions",
        "mcp_sessionvault_search_sessions",
    ]
    assert not any("save" in t or "delete" in t for t in allowed)
    [again] = hooks.install("gemini", home=tmp_path, cwd=tmp_path)
    assert not again.changed and json.loads(path.read_text())["tools"]["allowed"] == allowed
