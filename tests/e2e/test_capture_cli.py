"""`sessionvault import <client>` and `sessionvault capture on|off|status`, run as a user runs
them: a process in the project folder, with a HOME holding the transcript a real Claude Code
2.1.332 run wrote where Claude Code keeps it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sessionvault import names
from sessionvault.core import records
from sessionvault.local.hook import hook_key

from ..conftest import hook_key as make_hook_key
from ..conftest import make_user
from .test_capture_hook import FIXTURE, MARKER, NAME, SESSION_ID, TASK, clone_of


@pytest.fixture(autouse=True)
def _isolated(isolated_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (names.URL_ENV, names.KEY_ENV, "SESSIONVAULT_CAPTURE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    """A clone, and Claude Code's transcript of a session run in it, where Claude Code keeps it."""
    project = clone_of(tmp_path / "widget", "git@github.com:Acme/Widget.git")
    folder = home / ".claude" / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(project))
    folder.mkdir(parents=True)
    (folder / f"{SESSION_ID}.jsonl").write_bytes((FIXTURE / "session.jsonl").read_bytes())
    return project


def sessionvault(cwd: Path, home: Path, *argv: str, key: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), names.HOME_ENV: str(home / ".sessionvault")}
    if key:
        env[names.KEY_ENV] = key
    return subprocess.run(
        [sys.executable, "-m", "sessionvault.cli.main", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_import_dry_run_prints_the_checkpoint_and_saves_nothing(server, runtime, project, home) -> None:
    user = make_user(runtime)
    done = sessionvault(
        project, home, "import", "claude-code", "--dry-run", "--url", server.url, key=user.key
    )
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["name"] == NAME and shown["repo"] == "github.com/acme/widget" and MARKER in shown["summary"]
    assert shown["plan"] == [f"[doing] {TASK}"] and shown["files"] == ["notes/plan.md"]
    loaded = runtime.vault.load(user.principal, records.parse(records.LoadArgs, {"name": NAME}))
    assert loaded["found"] is False


def test_import_saves_the_newest_session_or_the_one_named(server, runtime, project, home) -> None:
    user = make_user(runtime)
    refused = sessionvault(project, home, "import", "claude-code", "--url", server.url, key=user.key)
    assert refused.returncode == 1 and "checkpoint scope" in refused.stderr  # the model's key: spooled
    hook_key.save(home / ".sessionvault", server.url, make_hook_key(user))  # as connect --hooks does
    done = sessionvault(project, home, "import", "claude-code", "--url", server.url, key=user.key)
    assert done.returncode == 0 and f"saved {NAME}" in done.stdout, done.stderr
    again = sessionvault(
        project, home, "import", "claude-code", "--session", SESSION_ID, "--url", server.url, key=user.key
    )
    assert again.returncode == 0, again.stderr
    loaded = runtime.vault.load(user.principal, records.parse(records.LoadArgs, {"name": NAME}))
    assert loaded["found"] and loaded["versions"] == [1]  # the same session again: no new version


def test_import_of_a_session_that_is_not_there_says_where_it_looked(project, home) -> None:
    done = sessionvault(project, home, "import", "claude-code", "--session", "no-such-session", "--dry-run")
    assert done.returncode == 2
    assert (
        "no claude-code session no-such-session found for" in done.stderr and "docs/clients.md" in done.stderr
    )


def test_capture_can_be_turned_off_and_on_for_the_repo(project, home) -> None:
    assert (
        sessionvault(project, home, "capture", "status").stdout.strip().endswith("github.com/acme/widget: on")
    )
    off = sessionvault(project, home, "capture", "off").stdout
    assert "github.com/acme/widget: off (turned off for github.com/acme/widget" in off
    assert "off" in sessionvault(project, home, "capture", "status").stdout
    assert sessionvault(project, home, "capture", "on").stdout.strip().endswith(": on")
