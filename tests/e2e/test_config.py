"""One local configuration (issue 17): config.toml in the state folder, read by every command.
A real `sessionvault dev` started with no --port serves on the file's port, loads the local
model before any request, and keeps the file's rate limits; doctor, connect, the hook and the
bridge find it there without --url. A bad file is one clear error (exit 2) for every command,
and read-only commands never create a state folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters, stdio_client

from sessionvault.cli.server import WARM_MARK
from sessionvault.local.host import embedded
from tests.conftest import free_port
from tests.support import jsonrpc
from tests.support.served import serving

RATE_PER_MINUTE = 5


def environ(home: Path, user_home: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONVAULT_", "DATABASE_", "OPENAI_"))}
    env["SESSIONVAULT_HOME"] = str(home)
    if user_home is not None:  # doctor and connect read the clients' configs under HOME
        env["HOME"] = str(user_home)
    env.update(extra)
    return env


def sessionvault(
    home: Path, *argv: str, user_home: Path | None = None, cwd: Path | None = None, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessionvault.cli.main", *argv],
        env=environ(home, user_home, **extra),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )


def write_config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------- without a server


def test_config_show_prints_each_value_and_where_it_came_from(tmp_path: Path) -> None:
    path = write_config(tmp_path / "state", "port = 9001\ncapture = false\n")
    done = sessionvault(tmp_path / "state", "config", "show", SESSIONVAULT_RATE_PER_DAY="70")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in done.stdout.splitlines()[2:]}
    assert rows == {
        "port": ["9001", str(path)],
        "url": ['"http://127.0.0.1:9001/mcp"', f"the local server at the port ({path})"],
        "embeddings": ['"local"', "default"],
        "rate_per_minute": ["60", "default"],
        "rate_per_day": ["70", "$SESSIONVAULT_RATE_PER_DAY"],
        "capture": ["false", str(path)],
    }
    assert done.stdout.splitlines()[:2] == [
        f"state folder: {tmp_path / 'state'}  ($SESSIONVAULT_HOME)",
        f"config file:  {path}",
    ]


def test_config_show_says_when_the_running_server_serves_on_another_port(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, "port = 9001\n")
    serving = {"url": "http://127.0.0.1:9002/mcp", "pid": os.getpid()}  # this test's process: alive
    (state / "server.json").write_text(json.dumps(serving))
    done = sessionvault(state, "config", "show")
    port_row = next(line for line in done.stdout.splitlines() if line.startswith("port "))
    assert "9001" in port_row and "the server running now serves on 9002" in port_row


@pytest.mark.parametrize(
    "argv",
    [
        ["config", "show"],
        ["doctor"],
        ["dev"],
        ["serve"],
        ["key", "list"],
        ["connect", "claude-code"],
        ["bridge"],
        ["service", "install", "--print"],
        ["capture", "status"],
    ],
    ids=lambda argv: "-".join(argv),
)
def test_a_bad_file_stops_every_command_with_exit_2_naming_file_key_and_type(
    tmp_path: Path, argv: list[str]
) -> None:
    path = write_config(tmp_path / "state", 'port = "9001"\n')
    done = sessionvault(tmp_path / "state", *argv, user_home=tmp_path / "home")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr == f'sessionvault: {path}: port must be a port number (1-65535), not "9001"\n'
    assert not (tmp_path / "state" / "pgdata").exists()


def test_the_session_start_hook_says_what_is_wrong_with_the_file_and_exits_0(tmp_path: Path) -> None:
    path = write_config(tmp_path / "state", "port = 9001\nprot = 1\n")
    done = sessionvault(tmp_path / "state", "hook", "session-start", SESSIONVAULT_API_KEY="sv_live_x")
    assert done.returncode == 0 and done.stderr == ""
    assert f"{path}: unknown key 'prot'" in done.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["key", "list"],
        ["user", "list"],
        ["admin", "list_users"],
        ["doctor"],
        ["config", "show"],
        ["service", "status"],
    ],
    ids=lambda argv: "-".join(argv),
)
def test_read_only_commands_never_create_a_state_folder_and_name_it(tmp_path: Path, argv: list[str]) -> None:
    missing = tmp_path / "typo"
    done = sessionvault(missing, *argv, user_home=tmp_path / "home")
    assert done.returncode != 0
    assert f"no SessionVault state in {missing}" in done.stdout + done.stderr
    assert not missing.exists()


# ---------------------------------------------------------------- a dev server from config.toml


@dataclass
class Dev:
    home: Path
    port: int
    key: str
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@pytest.fixture(scope="module")
def dev() -> Iterator[Dev]:
    """`sessionvault dev` with no --port and no SESSIONVAULT_PORT: config.toml says it all."""
    home = Path(tempfile.mkdtemp(prefix="sv-cfg-"))  # short: the database socket lives in it
    port = free_port()
    write_config(home, f'port = {port}\nembeddings = "local"\nrate_per_minute = {RATE_PER_MINUTE}\n')
    log = home.parent / f"{home.name}-dev.log"
    try:
        with serving(["dev"], environ(home), log):
            key = re.search(r"^\s+(sv_live_\S+)$", log.read_text(), re.MULTILINE)
            assert key, log.read_text()
            yield Dev(home, port, key.group(1), log)
    finally:
        embedded.stop(home)
        shutil.rmtree(home, ignore_errors=True)
        log.unlink(missing_ok=True)


def test_the_local_model_is_loaded_at_start_before_any_request(dev: Dev) -> None:
    deadline = time.monotonic() + 120  # polled: what is asserted is that it loads, not how fast
    while WARM_MARK not in dev.log.read_text():
        assert time.monotonic() < deadline, dev.log.read_text()
        time.sleep(0.2)
    text = dev.log.read_text()
    assert "Embeddings: local" in text and '"tool"' not in text  # no request has been served


def test_dev_serves_on_the_port_of_config_toml(dev: Dev) -> None:
    text = dev.log.read_text()
    assert f"SessionVault serving MCP at {dev.url}" in text
    assert f"Configuration: {dev.home / 'config.toml'}" in text


def test_doctor_finds_the_server_on_the_configured_port_and_the_environment_wins(
    dev: Dev, tmp_path: Path
) -> None:
    health = dev.url.replace("/mcp", "/health")
    done = sessionvault(dev.home, "doctor", user_home=tmp_path, SESSIONVAULT_API_KEY=dev.key)
    assert f"SessionVault doctor: {dev.url}" in done.stdout
    assert f"✓ server reachable at {health}" in done.stdout and "✓ the server accepts the key" in done.stdout
    assert f"✓ state folder {dev.home} (config: {dev.home / 'config.toml'})" in done.stdout
    assert "fix: sessionvault dev" not in done.stdout
    config = dev.home / "config.toml"
    saved, elsewhere = config.read_text(), free_port()
    config.write_text(saved.replace(f"port = {dev.port}", f"port = {elsewhere}"))
    try:
        moved = sessionvault(dev.home, "doctor", user_home=tmp_path, SESSIONVAULT_API_KEY=dev.key)
        assert f"✗ server not reachable at http://127.0.0.1:{elsewhere}/health" in moved.stdout
        assert "    fix: sessionvault dev\n" in moved.stdout  # the configured port needs no --port
        by_env = sessionvault(
            dev.home,
            "doctor",
            user_home=tmp_path,
            SESSIONVAULT_API_KEY=dev.key,
            SESSIONVAULT_PORT=str(dev.port),
        )
        assert f"✓ server reachable at {health}" in by_env.stdout
    finally:
        config.write_text(saved)


def test_connect_writes_the_configured_port(dev: Dev, tmp_path: Path) -> None:
    done = sessionvault(dev.home, "connect", "cursor", user_home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f'"url": "{dev.url}"' in done.stdout


def test_the_session_start_hook_reaches_the_configured_port(
    dev: Dev, tmp_path: Path, isolated_git: Path
) -> None:
    checkout = tmp_path / "shop"
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    subprocess.run(
        ["git", "-C", str(checkout), "remote", "add", "origin", "git@github.com:acme/cfg.git"], check=True
    )
    argv = ["hook", "session-start", "--client", "amazon-q"]  # the plain-text output
    done = sessionvault(dev.home, *argv, cwd=checkout, SESSIONVAULT_API_KEY=dev.key)
    assert done.returncode == 0
    assert "no saved session for repo `github.com/acme/cfg` yet" in done.stdout, done.stdout


@pytest.mark.anyio
async def test_the_bridge_forwards_to_the_configured_port(dev: Dev) -> None:
    env = {"SESSIONVAULT_HOME": str(dev.home), "SESSIONVAULT_API_KEY": dev.key}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sessionvault.cli.main", "bridge"], env=env
    )
    with anyio.fail_after(60):
        async with Client(stdio_client(params)) as client:
            tools = (await client.list_tools()).tools
    assert "save_session" in {t.name for t in tools}


def test_the_rate_limit_of_config_toml_reaches_the_server(dev: Dev) -> None:
    """Last: it spends this minute's tool calls."""
    statuses = [
        jsonrpc.post(dev.url, dev.key, "tools/call", {"name": "list_sessions", "arguments": {}}).status_code
        for _ in range(RATE_PER_MINUTE + 1)
    ]
    assert 429 in statuses and statuses.count(200) <= RATE_PER_MINUTE, statuses
