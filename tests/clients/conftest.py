"""The real-client tier: Claude Code, Gemini CLI, Codex CLI, OpenCode, Qwen Code, GitHub Copilot
CLI, Factory Droid, the Cline CLI and the Kilo Code CLI, installed
from npm at pinned versions by `make clients-test` into .venv/clients-npm/ (ignored by git),
run against a real SessionVault server under a throw-away HOME. No model and no API key: only
no-model commands (`<cli> mcp list`, Codex's app-server `mcpServerStatus/list`), and headless
runs (`-p`, `codex exec`) whose model endpoint is a `ModelRecorder` (tests/support): it records
each request and answers an error, so a test can see what the session-start hook printed arrive
in the client's request to its model.

Outside `make clients-test` (SESSIONVAULT_CLIENTS_BIN unset) every test here is skipped."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sessionvault import names
from sessionvault.core import apikeys
from sessionvault.db import identity
from sessionvault.local.hook.repo import current_repo
from sessionvault.local.remote import rpc
from sessionvault.runtime import Runtime, open_runtime
from sessionvault.service import accounts

from ..conftest import ServerThread, admin_db, free_port, make_settings
from ..support.model_recorder import ModelRecorder


@pytest.fixture(scope="session")
def runtime(pg) -> Iterator[Runtime]:
    """The shared runtime, without Client ID Metadata Documents: Claude Code and Codex use them
    when a server advertises them, and this machine cannot fetch theirs (claude.ai, chatgpt.com:
    no internet here), so their OAuth logins here go through registration, as before."""
    rt = open_runtime(make_settings(pg, oauth_client_documents=False))
    yield rt
    rt.close()


@pytest.fixture(scope="session")
def server(runtime: Runtime) -> Iterator[ServerThread]:
    with ServerThread(runtime) as thread:
        yield thread


BIN_ENV = "SESSIONVAULT_CLIENTS_BIN"
# The versions `make clients-test` installs (keep in step with the Makefile and docs/clients.md).
VERSIONS = {
    "claude": "2.1.332",
    "gemini": "0.61.0",
    "codex": "0.171.0",
    "opencode": "1.18.33",
    "qwen": "0.24.4",
    "copilot": "1.0.102",
    "droid": "0.225.2",  # @factory/cli-linux-x64
    "cline": "3.0.65",
    "kilo": "7.7.9",  # @kilocode/cli-linux-x64
}
CLI_TIMEOUT_S = 90.0


def clients_bin() -> Path:
    raw = os.environ.get(BIN_ENV)
    if not raw:
        pytest.skip(f"{BIN_ENV} is not set: run `make clients-test` (installs the client CLIs from npm)")
    path = Path(raw)
    if not path.is_dir():
        pytest.skip(f"{BIN_ENV}={raw} is not a folder: run `make clients-test`")
    return path


@dataclass
class Env:
    """A throw-away HOME and a project folder (a git repo), with the PATH a client has: node and
    the client CLIs, but not this virtualenv (so a bare `sessionvault` would not be found)."""

    home: Path
    project: Path
    bin: Path
    extra: dict[str, str] = field(default_factory=dict)
    last_output: str = ""

    @property
    def tmp(self) -> Path:
        folder = self.home / "tmp"
        folder.mkdir(exist_ok=True)
        return folder

    def env(self, key: str | None, **more: str) -> dict[str, str]:
        node_dir = Path(shutil.which("node") or "/usr/bin/node").parent
        env = {
            "HOME": str(self.home),
            "PATH": os.pathsep.join([str(self.bin), str(node_dir), "/usr/bin", "/bin"]),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "CI": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            # What a CLI unpacks or leaves in the temporary folder (native modules, error
            # reports) goes with this test's folder, not into the machine's /tmp.
            "TMPDIR": str(self.tmp),
            **self.extra,
            **more,
        }
        if key is not None:
            env[names.KEY_ENV] = key
        return env

    def run(
        self,
        argv: list[str],
        key: str | None,
        cwd: Path | None = None,
        timeout: float = CLI_TIMEOUT_S,
        **more: str,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=cwd or self.project,
            env=self.env(key, **more),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )

    def until(
        self,
        argv: list[str],
        key: str | None,
        seen: Callable[[], bool],
        timeout: float = CLI_TIMEOUT_S,
        **more: str,
    ) -> tuple[bool, str]:
        """Run `argv` until `seen()` holds or it exits or `timeout` passes; then stop it (a
        client may keep retrying its unreachable model endpoint). (seen, its output)."""
        proc = subprocess.Popen(
            argv,
            cwd=self.project,
            env=self.env(key, **more),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and not seen() and proc.poll() is None:
                time.sleep(0.2)
            time.sleep(0.5)  # a last log line in flight
            return seen(), ""
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)  # this client and its children only
            out, _ = proc.communicate(timeout=30)
            self.last_output = out

    def connect(self, client: str, url: str, key: str, *extra: str, cwd: Path | None = None) -> str:
        """`sessionvault connect` as the user runs it: the venv's command, this HOME. With --hooks,
        the hooks' own key (read, checkpoint) as an operator gives it for a server whose keys
        this machine cannot make (`--hook-key`): the test server is not this HOME's database."""
        if "--hooks" in extra:
            owner = identity.live_key_owner(admin_db(), apikeys.digest(key))
            assert owner, "the key names no live user"
            made, _ = accounts.create_key(admin_db(), owner, "hooks", apikeys.HOOK_SCOPES)
            extra = (*extra, "--hook-key", made)
        done = subprocess.run(
            [sys.executable, "-m", "sessionvault.cli.main", "connect", client, "--url", url, *extra],
            cwd=cwd or self.project,
            env={**os.environ, "HOME": str(self.home), names.KEY_ENV: key},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr


@pytest.fixture
def client_env(tmp_path: Path) -> Env:
    bin_dir = clients_bin()
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    return Env(home=home, project=project.resolve(), bin=bin_dir)


@pytest.fixture
def closed_url() -> str:
    """A model endpoint nobody listens on: the client's model call fails at once."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def model() -> Iterator[ModelRecorder]:
    """The client's model endpoint: records every request, answers a well-formed error."""
    with ModelRecorder() as recorder:
        yield recorder


def save_marked_session(url: str, key: str, project: Path) -> str:
    """Save a session for the repo at `project` whose summary holds a unique marker, the text
    a session-start hook must hand the model; returns the marker."""
    marker = f"handoff-marker-{os.urandom(6).hex()}"
    arguments = {"name": "client-tier", "repo": current_repo(project), "summary": f"Resume here: {marker}."}
    body = rpc.rpc_body("tools/call", {"name": "save_session", "arguments": arguments})
    reply = rpc.request("POST", url, body=body, headers=rpc.mcp_headers(key), timeout=30)
    assert reply.status == 200, reply
    rpc.tool_result(reply)  # raises on a tool error
    return marker


class ToolCalls(logging.Handler):
    """The server's request log lines, to see the hook's `load_session` call arrive."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def calls(self, tool: str, user_id: str) -> list[logging.LogRecord]:
        return [
            r
            for r in self.records
            if getattr(r, "tool", None) == tool and str(getattr(r, "user_id", "")) == str(user_id)
        ]


@pytest.fixture
def tool_calls() -> Iterator[ToolCalls]:
    handler = ToolCalls()
    logger = logging.getLogger("sessionvault")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
