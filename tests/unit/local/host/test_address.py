"""Where the running server serves (issue 27, item B): `make dev PORT=N` records its address
beside its lock, and every local command uses it unless a port or URL is configured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sessionvault.local import config
from sessionvault.local.host import statelock, target


def env(state: Path, **extra: str) -> dict[str, str]:
    return {"SESSIONVAULT_HOME": str(state), "HOME": str(state.parent), **extra}


def test_a_running_servers_address_is_what_every_command_resolves(tmp_path: Path) -> None:
    url = statelock.record_address(tmp_path, "127.0.0.1", 9123)
    assert url == "http://127.0.0.1:9123/mcp"
    cfg = config.load(env(tmp_path))
    assert cfg.url == url  # the hooks and the bridge
    resolved = target.server_url(cfg)  # connect, doctor, config show
    assert resolved.value == url and config.SERVING_FILE in resolved.source
    assert target.default_url(env(tmp_path), tmp_path) == url


def test_a_configured_port_or_url_wins_over_the_record(tmp_path: Path) -> None:
    statelock.record_address(tmp_path, "127.0.0.1", 9123)
    by_port = config.load(env(tmp_path, SESSIONVAULT_PORT="9555"))
    assert by_port.url == "http://127.0.0.1:9555/mcp" == target.server_url(by_port).value
    (tmp_path / config.FILE).write_text("port = 9666\n")
    by_file = config.load(env(tmp_path))
    assert by_file.url == "http://127.0.0.1:9666/mcp" == target.server_url(by_file).value
    by_url = config.load(env(tmp_path, SESSIONVAULT_URL="https://sv.example.com/mcp"))
    assert by_url.url == "https://sv.example.com/mcp" == target.server_url(by_url).value


def test_a_record_left_by_a_dead_process_is_ignored(tmp_path: Path) -> None:
    probe = [sys.executable, "-c", "import os; print(os.getpid())"]
    dead = subprocess.run(probe, capture_output=True, text=True, check=True)
    (tmp_path / config.SERVING_FILE).write_text(
        json.dumps({"url": "http://127.0.0.1:9123/mcp", "pid": int(dead.stdout)})
    )
    assert config.load(env(tmp_path)).url == f"http://127.0.0.1:{config.DEFAULT_PORT}/mcp"


def test_only_the_recording_process_forgets_it(tmp_path: Path) -> None:
    path = tmp_path / config.SERVING_FILE
    path.write_text(json.dumps({"url": "http://127.0.0.1:9123/mcp", "pid": os.getppid()}))
    statelock.forget_address(tmp_path)  # another server's: left alone
    assert path.exists()
    statelock.record_address(tmp_path, "0.0.0.0", 9124)
    assert json.loads(path.read_text())["url"] == "http://127.0.0.1:9124/mcp"  # reachable, not 0.0.0.0
    statelock.forget_address(tmp_path)
    assert not path.exists()
