"""`sessionvault service`: the unit it writes passes `systemd-analyze verify` (Debian's systemd),
and where a user systemd runs here it really starts and serves. The launchd agent is checked
in tests/unit/local/host/test_service.py (generated on Linux by naming the platform)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from sessionvault.local.host import command, service, service_units
from tests.conftest import free_port


def systemd_analyze() -> str:
    """The systemd-analyze binary, installed from Debian's systemd package when missing. Without
    apt it is a skip on a developer's machine, a failure in CI ($CI): there it must run."""
    found = shutil.which("systemd-analyze")
    if found:
        return found
    why = ""
    if shutil.which("apt-get") and os.geteuid() == 0:
        done = subprocess.run(
            "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd",
            shell=True,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        found = shutil.which("systemd-analyze")
        if found:
            return found
        why = f"apt-get install systemd failed: {done.stderr.strip()[-500:]}"
    else:
        why = "systemd-analyze is missing and apt-get (as root) is not available to install it"
    if os.environ.get("CI"):
        pytest.fail(f"in CI the unit must be verified: {why}")
    pytest.skip(why)


def verify(unit: Path, *, user: bool, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    runtime = tmp_path / "xdg-runtime"  # --user needs a runtime folder; a private one will do
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "SYSTEMD_LOG_LEVEL": "notice"}
    argv = [systemd_analyze(), *(["--user"] if user else []), "verify", str(unit)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


def write_unit(tmp_path: Path, **env: str) -> Path:
    s = service.build(platform="linux", env=env, user_home=tmp_path / "home")
    unit = tmp_path / service_units.UNIT  # verify wants the unit's own name
    unit.write_text(s.text())
    return unit


@pytest.mark.parametrize("user", [False, True], ids=["system-mode", "user-mode"])
@pytest.mark.parametrize(
    "env",
    [
        {},
        {"SESSIONVAULT_HOME": "/srv/sv state", "SESSIONVAULT_PORT": "9100"},
        {"DATABASE_URL": "postgresql://app:p%40ss@db.example/sv", "SESSIONVAULT_MASTER_KEY_FILE": "/k/m.key"},
    ],
    ids=["embedded", "spaces", "external-db"],
)
def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path, user: bool, env: dict[str, str]) -> None:
    unit = write_unit(tmp_path, **env)
    done = verify(unit, user=user, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    # verify reports a bad directive on stderr and still exits 0: no line about the unit at all.
    assert str(unit) not in done.stderr and service_units.UNIT not in done.stderr, done.stderr


def test_verify_would_catch_a_bad_unit(tmp_path: Path) -> None:
    """The check above means something: the same verify flags a broken directive."""
    unit = write_unit(tmp_path)
    unit.write_text(unit.read_text().replace("Restart=on-failure", "Restart=sometimes"))
    done = verify(unit, user=True, tmp_path=tmp_path)
    assert str(unit) in done.stderr and "restart specifier" in done.stderr


def test_the_cli_prints_the_unit_for_this_sessionvault(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONVAULT_", "DATABASE_"))}
    env.update(SESSIONVAULT_HOME=str(tmp_path / "state"), SESSIONVAULT_PORT="9123")
    argv = [*command.sessionvault_argv(), "service", "install", "--print"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    exec_start = next(line for line in done.stdout.splitlines() if line.startswith("ExecStart="))
    assert command.sessionvault_argv()[0] in exec_start and '"dev" "--port" "9123"' in exec_start
    assert f'Environment="SESSIONVAULT_HOME={tmp_path / "state"}"' in done.stdout
    assert not (tmp_path / "state").exists()
    darwin = subprocess.run(
        [*argv, "--platform", "darwin"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert darwin.returncode == 0 and "<key>Label</key>" in darwin.stdout


def test_where_a_user_systemd_runs_the_service_really_starts_and_serves(tmp_path: Path) -> None:
    why_not = service.user_systemd()
    if why_not:
        pytest.skip(f"no user systemd in this test environment: {why_not}")
    port = free_port()
    home = Path.home()
    unit = home / ".config/systemd/user" / service_units.UNIT
    if unit.exists():
        pytest.skip(f"{unit} exists already: not replacing the user's own service")
    state = Path(os.environ.get("TMPDIR", "/tmp")) / f"sv-svc-{os.getpid()}"
    env = {"SESSIONVAULT_HOME": str(state), "SESSIONVAULT_PORT": str(port), "SESSIONVAULT_EMBEDDINGS": "none"}
    s = service.build(env=env, platform="linux")
    said: list[str] = []
    try:
        assert service.install(s, out=said.append) == 0, said
        deadline, health = time.monotonic() + 180, f"http://127.0.0.1:{port}/health"
        while True:
            try:
                with urllib.request.urlopen(health, timeout=2) as reply:
                    assert reply.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, subprocess.run(
                    service.logs_argv(s), capture_output=True, text=True
                ).stdout
                time.sleep(1)
        assert service.status(s, out=said.append) == 0
    finally:
        service.uninstall(s, out=said.append)
        shutil.rmtree(state, ignore_errors=True)
    assert not unit.exists()


def test_install_here_without_a_user_systemd_says_what_to_run(tmp_path: Path) -> None:
    if service.user_systemd() is None:
        pytest.skip("a user systemd runs here: covered by the test that really starts it")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONVAULT_", "DATABASE_"))}
    env.update(HOME=str(tmp_path), SESSIONVAULT_HOME=str(tmp_path / "state"))
    argv = [sys.executable, "-m", "sessionvault.cli.main", "service", "install"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    unit = tmp_path / ".config/systemd/user" / service_units.UNIT
    assert unit.is_file() and f"wrote {unit}" in done.stdout
    assert (
        "systemctl --user daemon-reload && systemctl --user enable --now sessionvault.service" in done.stdout
    )
    status = subprocess.run(
        [*argv[:-1], "status"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert status.returncode == 3 and f"installed: {unit}" in status.stdout
    gone = subprocess.run(
        [*argv[:-1], "uninstall"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert gone.returncode == 0 and not unit.exists()
