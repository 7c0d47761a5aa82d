"""`sessionvault connect`: arguments, defaults, and what the command prints and writes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from sessionvault.cli.clients import add_connect
from sessionvault.local.setup.registry import render

from ..local.setup.documented import ENV_FORM, URL

# --- CLI --------------------------------------------------------------------------------------


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="sessionvault")
    add_connect(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_cli_defaults() -> None:
    args = _parse(["connect", "cursor"])
    # --url None: decided when the command runs ($SESSIONVAULT_URL, a deployed stack, else URL)
    assert (args.client, args.url, args.key, args.apply, args.use_env) == (
        "cursor",
        None,
        None,
        False,
        True,
    )
    assert not _parse(["connect", "cursor", "--no-env"]).use_env


def test_cli_url_is_the_local_server_without_env_or_a_deployed_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SESSIONVAULT_HOME", str(tmp_path))  # no deployment saved there
    monkeypatch.delenv("SESSIONVAULT_URL", raising=False)
    monkeypatch.delenv("SESSIONVAULT_API_KEY", raising=False)
    args = _parse(["connect", "windsurf"])
    assert args.func(args) == 0
    assert capsys.readouterr().out == render("windsurf", URL, None, use_env=True)


def test_cli_rejects_unknown_client() -> None:
    with pytest.raises(SystemExit):
        _parse(["connect", "notepad"])


def test_cli_prints_the_snippet(capsys: pytest.CaptureFixture[str]) -> None:
    args = _parse(["connect", "windsurf", "--url", "https://h:1/mcp"])
    assert args.func(args) == 0
    assert capsys.readouterr().out == render("windsurf", "https://h:1/mcp", None, use_env=True)


def test_cli_key_defaults_to_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SESSIONVAULT_API_KEY", "from-env")
    args = _parse(["connect", "zed"])
    assert args.func(args) == 0
    assert '"Authorization": "Bearer from-env"' in capsys.readouterr().out


def test_cli_apply_writes_and_reports_path_and_backup(
    home: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("SESSIONVAULT_API_KEY", raising=False)
    path = cwd / ".mcp.json"
    path.write_text('{\n  "mcpServers": {}\n}\n')
    args = _parse(["connect", "claude-code", "--apply"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert f"updated: {path}" in out
    assert f"backup of {path} as it was: " in out
    assert json.loads(path.read_text())["mcpServers"]["sessionvault"] == ENV_FORM["claude-code"]
    assert args.func(args) == 0
    assert f"already up to date: {path}" in capsys.readouterr().out


def test_cli_missing_key_is_an_error_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SESSIONVAULT_API_KEY", raising=False)
    args = _parse(["connect", "claude-desktop"])
    assert args.func(args) == 2
    assert "API key" in capsys.readouterr().err


def test_cli_hooks_on_a_client_without_hooks_is_refused_before_writing(
    home: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("SESSIONVAULT_API_KEY", "sv_live_" + "A" * 32)
    args = _parse(["connect", "zed", "--hooks"])
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert "zed has no session-start hook" in err and "nothing was written" in err
    assert not home.exists() or not any(home.rglob("*"))  # no config, no backup, no folder


def test_cli_key_in_env_mode_says_where_the_key_must_go(
    home: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELL", "/bin/zsh")
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("SESSIONVAULT_API_KEY", raising=False)
    key = "sv_live_abcd" + "S" * 28
    args = _parse(["connect", "gemini", "--apply", "--key", key])
    assert args.func(args) == 0
    err = capsys.readouterr().err
    assert "the --key you gave is NOT written" in err
    assert "export SESSIONVAULT_API_KEY=sv_live_abcd..." in err
    assert "~/.zshrc" in err
    assert key not in err  # only its prefix is echoed
    written = (home / ".gemini" / "settings.json").read_text()
    assert key not in written and "$SESSIONVAULT_API_KEY" in written


def test_cli_key_in_env_mode_is_quiet_when_this_shell_already_exports_it(
    home: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    key = "sv_live_" + "Q" * 32
    monkeypatch.setenv("SESSIONVAULT_API_KEY", key)
    args = _parse(["connect", "cursor", "--key", key])
    assert args.func(args) == 0
    assert "NOT written" not in capsys.readouterr().err


def test_cli_desktop_bridge_names_the_command_by_absolute_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ..local.conftest import SV

    args = _parse(["connect", "claude-desktop", "--key", "sv_live_" + "D" * 32])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["mcpServers"]["sessionvault"]["command"] == SV


def test_connect_help_lists_every_client(capsys: pytest.CaptureFixture[str]) -> None:
    from sessionvault.local.setup.registry import CLIENTS

    with pytest.raises(SystemExit):
        _parse(["connect", "--help"])
    out = capsys.readouterr().out
    assert len(CLIENTS) >= 20
    for client in CLIENTS:
        assert client in out


def test_connect_with_hooks_keeps_one_backup_per_file_outside_the_project_and_says_where(
    home: Path, cwd: Path, state: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("SESSIONVAULT_API_KEY", "sv_live_" + "H" * 32)
    project, settings = cwd / ".mcp.json", home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    project.write_text('{"mcpServers": {}}\n')
    settings.write_text('{"theme": "dark"}\n')
    args = _parse(["connect", "claude-code", "--hooks"])
    assert args.func(args) == 0
    out = capsys.readouterr().out.splitlines()
    # Four entries changed in settings.json (the session-start hook and three end-of-work
    # events): one line for the file, one backup of it.
    assert out.count(f"updated: {settings}") == 1 and out.count(f"updated: {project}") == 1
    said = {
        line.split(" as it was: ")[0]: Path(line.split(" as it was: ")[1])
        for line in out
        if " as it was: " in line
    }
    assert set(said) == {f"backup of {project}", f"backup of {settings}"}
    kept = sorted(p for p in (state / "backups").rglob("*") if p.is_file())
    assert kept == sorted(said.values())
    assert said[f"backup of {settings}"].read_text() == '{"theme": "dark"}\n'
    assert said[f"backup of {project}"].read_text() == '{"mcpServers": {}}\n'
    assert sorted(p.name for p in cwd.iterdir()) == [".mcp.json"]  # nothing for `git add .`
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.json"]


def test_connect_claude_code_says_the_server_waits_for_approval_until_approved(
    home: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("SESSIONVAULT_API_KEY", "sv_live_" + "P" * 32)
    args = _parse(["connect", "claude-code", "--apply"])
    assert args.func(args) == 0
    err = capsys.readouterr().err
    assert 'Claude Code does not use this server until you approve it (`claude mcp list` says "Pending' in err
    assert f'cd {cwd} && claude, and choose "Use this MCP server"' in err
    assert not (home / ".claude.json").exists()  # approving is the user's decision: nothing written

    home.mkdir(exist_ok=True)
    (home / ".claude.json").write_text(
        json.dumps({"projects": {str(cwd): {"enabledMcpjsonServers": ["sessionvault"]}}})
    )
    args = _parse(["connect", "claude-code", "--apply"])
    assert args.func(args) == 0
    assert "approve" not in capsys.readouterr().err
    args = _parse(["connect", "cursor", "--apply"])  # a client without such a step
    assert args.func(args) == 0
    assert "approve" not in capsys.readouterr().err
