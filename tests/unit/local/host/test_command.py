"""The `sessionvault` command that hooks and the stdio bridge entry name: an absolute path found
at `connect` time, so it runs from a client whose PATH lacks the virtualenv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sessionvault.local.host import command
from sessionvault.local.setup import hooks

# The autouse `_pinned_command` fixture replaces `sessionvault_argv`: these tests use the original.
REAL_ARGV = command.sessionvault_argv


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_prefers_the_script_beside_the_running_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _exe(tmp_path / "venv" / "bin" / "sessionvault")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    monkeypatch.setenv("PATH", str(_exe(tmp_path / "other" / "sessionvault").parent))
    assert REAL_ARGV() == [str(script)]


def test_then_the_one_on_path_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bare" / "python"))
    on_path = _exe(tmp_path / "bin" / "sessionvault")
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert REAL_ARGV() == [str(on_path)]


def test_else_the_interpreter_runs_the_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python = tmp_path / "bare" / "python"
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert REAL_ARGV() == [str(python), "-m", "sessionvault.cli.main"]


def test_the_module_fallback_really_runs_the_hook() -> None:
    """`python -m sessionvault.cli.main` is a working command (cli/main.py has a __main__ guard)."""
    done = subprocess.run(
        [sys.executable, "-m", "sessionvault.cli.main", "hook", "session-start", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/nonexistent", "HOME": os.environ.get("HOME", "/")},
    )
    assert done.returncode == 0, done.stderr
    assert "session-start" in done.stdout


def test_the_resolved_command_runs_without_the_venv_on_path() -> None:
    argv = REAL_ARGV()
    assert os.path.isabs(argv[0])
    done = subprocess.run(
        [*argv, "hook", "session-start", "--help"],
        capture_output=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr


def test_hook_command_quotes_a_path_with_spaces_and_is_still_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(command, "sessionvault_argv", lambda: ["/Users/a b/venv/bin/sessionvault"])
    line = hooks.hook_command("claude-code", "https://vault.example.com/mcp")
    assert line == (
        "'/Users/a b/venv/bin/sessionvault' hook session-start --client claude-code "
        "--url https://vault.example.com/mcp"
    )
    assert hooks._is_ours({"command": line})
    assert hooks.hook_argv(line) == ["/Users/a b/venv/bin/sessionvault"]


def test_the_module_form_is_ours_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        command, "sessionvault_argv", lambda: ["/usr/bin/python3", "-m", "sessionvault.cli.main"]
    )
    line = hooks.hook_command("gemini")
    assert hooks._is_ours({"command": line})
    assert hooks.hook_argv(line) == ["/usr/bin/python3", "-m", "sessionvault.cli.main"]
    assert hooks.hook_argv("echo hello") is None


def test_probe_reports_missing_failing_and_working_commands(tmp_path: Path) -> None:
    missing = command.probe(["sessionvault-nope", "--help"], env={"PATH": str(tmp_path)})
    assert not missing.ok and "not found" in missing.detail
    failing = tmp_path / "fails"
    failing.write_text("#!/bin/sh\nexit 127\n")
    failing.chmod(0o755)
    bad = command.probe([str(failing), "hook"])
    assert not bad.ok and "exit 127" in bad.detail
    assert command.probe([str(_exe(tmp_path / "ok"))]).ok
