"""End to end: `sessionvault hook checkpoint`, run as a process the way Claude Code runs it (its
Stop / SessionEnd input on stdin, the transcript a real Claude Code 2.1.332 run wrote), saves an
automatic checkpoint to the real server with no model call; the next client's session-start
hook shows it in a clone with another spelling of the remote; nothing is lost or doubled when
the server is away; secrets never leave the laptop; capture can be turned off."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessionvault import names
from sessionvault.core import records
from sessionvault.local.hook import hook_key
from sessionvault.local.hook import session_start as context
from sessionvault.local.hook.capture import spool, switch

from ..conftest import User, free_port, make_user
from ..conftest import hook_key as make_hook_key

FIXTURE = Path(__file__).parent.parent / "fixtures" / "transcripts" / "claude-code-2.1.332"
SESSION_ID = "496a25d3-e98a-4020-85c5-f3a1e2a74ea8"
NAME = f"auto/claude-code/{SESSION_ID}"
MARKER = "sv-marker-7f3a"
TASK = "Write the widget plan"
FAILURE = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\": sv-boom: widget config missing"
AWS_KEY = "AKIA" + "Z4QX7N2LWB3KD5HJ"  # made up: the shape of an AWS access key id


@pytest.fixture(autouse=True)
def _isolated(isolated_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (names.URL_ENV, names.KEY_ENV, switch.ENV):
        monkeypatch.delenv(var, raising=False)


def git(path: Path, *args: str) -> None:
    who = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "-C", str(path), *who, *args], check=True, capture_output=True)


def clone_of(path: Path, remote: str) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    git(path, "remote", "add", "origin", remote)
    (path / "README.md").write_text("widget\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return clone_of(tmp_path / "widget", "git@github.com:Acme/Widget.git")


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def payload(event: str, project: Path, transcript: Path, **more: Any) -> dict[str, Any]:
    data = json.loads((FIXTURE / f"hook-{event}.json").read_text())
    return {**data, "cwd": str(project), "transcript_path": str(transcript), **more}


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "claude" / f"{SESSION_ID}.jsonl"
    path.parent.mkdir()
    path.write_bytes((FIXTURE / "session.jsonl").read_bytes())
    return path


def later_turn(transcript: Path, text: str) -> None:
    """Claude Code's next turn in the transcript: its last assistant text entry, again, saying `text`."""
    lines = transcript.read_text().splitlines()
    said = [json.loads(line) for line in lines if '"type":"assistant"' in line and '"type":"text"' in line]
    entry = said[-1]
    entry["message"]["content"] = [{"type": "text", "text": text}]
    transcript.write_text("\n".join([*lines, json.dumps(entry)]) + "\n")


def checkpoint_hook(url: str, user: User, state: Path, stdin: dict[str, Any], **env: str) -> str:
    """The hook as Claude Code runs it after `connect --hooks`: a process, its input on stdin,
    the model's key in its environment and the hooks' own key in the state folder (made once per
    state and server, as connect does); returns its stdout."""
    if not hook_key.saved(state, url):
        hook_key.save(state, url, make_hook_key(user))
    argv = [sys.executable, "-m", "sessionvault.cli.main", "hook", "checkpoint", "--client", "claude-code"]
    environ = {**os.environ, names.KEY_ENV: user.key, names.URL_ENV: url, names.HOME_ENV: str(state), **env}
    done = subprocess.run(
        argv, input=json.dumps(stdin), capture_output=True, text=True, env=environ, timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout


def load(runtime, user, name: str = NAME) -> dict[str, Any]:
    return runtime.vault.load(user.principal, records.parse(records.LoadArgs, {"name": name}))


def test_a_stop_hook_saves_the_checkpoint_and_the_next_client_sees_it(
    server, runtime, project, transcript, state, tmp_path
) -> None:
    user = make_user(runtime)
    out = checkpoint_hook(server.url, user, state, payload("Stop", project, transcript))
    assert out == ""  # what every client reads as "carry on"

    saved = load(runtime, user)
    assert saved["found"] and saved["automatic"] is True and saved["client"] == "claude-code"
    assert saved["repo"] == "github.com/acme/widget" and saved["branch"] == "main" and saved["commit"]
    assert MARKER in saved["summary"] and saved["summary"].startswith("Asked: Plan the widget")
    assert saved["plan"] == [f"[doing] {TASK}"] and saved["todos"] == [f"{TASK} (in progress)"]
    assert saved["files"] == ["notes/plan.md"] and saved["errors"] == [FAILURE]

    other = clone_of(tmp_path / "elsewhere", "https://github.com/acme/widget")
    env = {names.KEY_ENV: user.key, names.HOME_ENV: str(tmp_path / "gemini-state")}
    shown = context.session_context(server.url, cwd=other, env=env, client="gemini", timeout=5)
    assert "last checkpoint for `github.com/acme/widget` (just now" in shown  # the checkout's repo
    assert "automatic checkpoint by claude-code" in shown  # who saved it: inside the notes
    assert MARKER in shown and "sv-boom" not in shown.split("```")[0]  # saved text only in the notes


def test_an_unreachable_server_spools_the_checkpoint_and_the_next_hook_sends_it(
    server, runtime, project, transcript, state
) -> None:
    user = make_user(runtime)
    away = f"http://127.0.0.1:{free_port()}/mcp"
    checkpoint_hook(away, user, state, payload("Stop", project, transcript))
    [spooled] = list((state / spool.FOLDER).glob("*.json"))
    assert stat.S_IMODE(spooled.stat().st_mode) == 0o600
    assert stat.S_IMODE((state / spool.FOLDER).stat().st_mode) == 0o700
    assert not load(runtime, user)["found"]

    checkpoint_hook(server.url, user, state, payload("SessionEnd", project, transcript))
    assert not list((state / spool.FOLDER).glob("*.json"))
    assert load(runtime, user)["versions"] == [1]

    checkpoint_hook(server.url, user, state, payload("SessionEnd", project, transcript))
    assert load(runtime, user)["versions"] == [1]  # the same content again: no new version


def test_a_checkpoint_on_every_turn_is_throttled_into_the_spool(
    server, runtime, project, transcript, state
) -> None:
    user = make_user(runtime)
    checkpoint_hook(server.url, user, state, payload("Stop", project, transcript))
    later_turn(transcript, "a later turn")
    checkpoint_hook(server.url, user, state, payload("Stop", project, transcript))
    assert load(runtime, user)["versions"] == [1]  # within the throttle: folded, waiting
    assert len(list((state / spool.FOLDER).glob("*.json"))) == 1
    checkpoint_hook(server.url, user, state, payload("SessionEnd", project, transcript))
    assert load(runtime, user)["versions"] == [2, 1]  # the session's end sends the newest state


def test_secrets_are_redacted_on_the_laptop_before_the_spool_and_the_server(
    server, runtime, project, transcript, state
) -> None:
    user = make_user(runtime)
    leaky = payload("Stop", project, transcript, last_assistant_message=f"used {AWS_KEY} to deploy")
    away = f"http://127.0.0.1:{free_port()}/mcp"
    checkpoint_hook(away, user, state, leaky)
    [spooled] = list((state / spool.FOLDER).glob("*.json"))
    assert AWS_KEY not in spooled.read_text() and "[REDACTED:aws_access_key]" in spooled.read_text()
    checkpoint_hook(server.url, user, state, payload("SessionEnd", project, transcript))
    assert AWS_KEY not in json.dumps(load(runtime, user))


def test_capture_turned_off_saves_and_spools_nothing(server, runtime, project, transcript, state) -> None:
    user = make_user(runtime)
    checkpoint_hook(server.url, user, state, payload("Stop", project, transcript), SESSIONVAULT_CAPTURE="off")
    switch.set_repo(state, "github.com/acme/widget", on=False)
    checkpoint_hook(server.url, user, state, payload("SessionEnd", project, transcript))
    assert not load(runtime, user)["found"] and not (state / spool.FOLDER).exists()
    switch.set_repo(state, "github.com/acme/widget", on=True)
    checkpoint_hook(server.url, user, state, payload("SessionEnd", project, transcript))
    assert load(runtime, user)["found"]


def test_a_broken_input_or_transcript_still_exits_zero_silently(
    server, runtime, project, state, tmp_path
) -> None:
    user = make_user(runtime)
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes((FIXTURE / "session.jsonl").read_bytes()[:5000])
    for stdin in ({}, {"transcript_path": str(tmp_path / "missing.jsonl")}, payload("Stop", project, torn)):
        assert checkpoint_hook(server.url, user, state, stdin) == ""


def test_hooks_with_only_the_models_key_keep_the_checkpoint_until_they_have_their_own(
    server, runtime, project, transcript, state
) -> None:
    """Issue 35 item 1, after an upgrade: hooks installed before the checkpoint scope send the
    model's key, which may no longer save checkpoints. Nothing is lost: the checkpoint waits in
    the spool, and goes with the next hook once the hooks have their own key (what `connect
    --hooks` or `sessionvault dev` writes)."""
    user = make_user(runtime)
    argv = [sys.executable, "-m", "sessionvault.cli.main", "hook", "checkpoint", "--client", "claude-code"]
    environ = {**os.environ, names.KEY_ENV: user.key, names.URL_ENV: server.url, names.HOME_ENV: str(state)}
    stdin = json.dumps(payload("Stop", project, transcript))
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=environ, timeout=60, check=False
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert not load(runtime, user)["found"] and len(list((state / spool.FOLDER).glob("*.json"))) == 1
    saved_in = hook_key.save(state, server.url, make_hook_key(user))
    assert stat.S_IMODE(saved_in.stat().st_mode) == 0o600
    checkpoint_hook(server.url, user, state, payload("SessionEnd", project, transcript))
    assert load(runtime, user)["found"] and not list((state / spool.FOLDER).glob("*.json"))
