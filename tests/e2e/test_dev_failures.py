"""Clear failures before anything misleading is printed (issue 17, item 6): a busy port, a
state folder in use, an unreachable database, a state folder that does not exist, --version."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessionvault.cli import main as cli
from sessionvault.errors import StateInUse
from sessionvault.local.host import embedded, statelock, target
from tests.conftest import free_port
from tests.support.served import serving

QUICKSTART_MARK = "State folder:"  # the first line of the quick start


def environ(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONVAULT_", "DATABASE_"))}
    env.update(SESSIONVAULT_HOME=str(home), SESSIONVAULT_EMBEDDINGS="none", **extra)
    return env


def sessionvault(
    home: Path, *argv: str, timeout: float = 120, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessionvault.cli.main", *argv],
        env=environ(home, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    # Short and outside pytest's 0700 tmp_path: the socket lives in it, postgres runs as its own user.
    path = Path(tempfile.mkdtemp(prefix="sv-df-"))
    yield path
    embedded.stop(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def running(home: Path) -> Iterator[tuple[subprocess.Popen[str], int, Path]]:
    """`sessionvault dev` serving from `home` on a free port."""
    port = free_port()
    log = home.parent / f"{home.name}-dev.log"
    try:
        with serving(["dev", "--port", str(port)], environ(home), log) as server:
            yield server, port, home
    finally:
        log.unlink(missing_ok=True)


def test_a_busy_port_is_named_with_its_pid_before_the_quick_start(tmp_path: Path) -> None:
    listener = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket,time;s=socket.socket();s.bind(('127.0.0.1',0));"
            "s.listen();print(s.getsockname()[1],flush=True);time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert listener.stdout is not None
        port = int(listener.stdout.readline())
        fresh = tmp_path / "never-made"
        done = sessionvault(fresh, "dev", "--port", str(port), timeout=30)
        assert done.returncode == 2, done.stderr
        assert f"port {port} is in use by pid {listener.pid}" in done.stderr
        assert QUICKSTART_MARK not in done.stdout and "serving" not in done.stdout
        assert not fresh.exists()  # nothing was started or created
    finally:
        listener.kill()
        listener.wait()


def test_the_port_owner_is_found_through_proc() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        if not Path("/proc/net/tcp").exists():
            pytest.skip("no /proc/net/tcp here (not Linux)")
        owner = statelock.port_owner(port)
        assert owner is not None and owner[0] == os.getpid()
        with pytest.raises(Exception, match=f"port {port} is in use by pid {os.getpid()}"):
            statelock.bind("127.0.0.1", port)


def test_a_second_dev_on_the_same_state_folder_is_refused(
    running: tuple[subprocess.Popen[str], int, Path],
) -> None:
    server, _, home = running
    assert (home / statelock.LOCK_FILE).read_text().strip() == str(server.pid)
    assert statelock.holder(home) == server.pid
    pid_before = (home / "server.pid").read_text()
    for command in ("dev", "serve"):
        done = sessionvault(home, command, "--port", str(free_port()), timeout=60)
        assert done.returncode == 2, done.stderr
        assert f"{home} is in use by another SessionVault server (pid {server.pid})" in done.stderr
        assert QUICKSTART_MARK not in done.stdout and "serving" not in done.stdout
    assert (home / "server.pid").read_text() == pid_before  # not overwritten
    assert server.poll() is None  # and the running server is untouched


def test_rotate_master_key_refuses_while_the_lock_is_held(
    running: tuple[subprocess.Popen[str], int, Path],
) -> None:
    server, _, home = running
    (home / "server.pid").unlink()  # the lock alone refuses: no pid file is trusted
    try:
        before = (home / "master.key").read_text()
        done = sessionvault(home, "rotate-master-key", timeout=60)
        assert done.returncode == 2
        assert f"in use by a SessionVault server (pid {server.pid})" in done.stderr
        assert (home / "master.key").read_text() == before
    finally:
        (home / "server.pid").write_text(f"{server.pid}\n")


def test_the_lock_is_gone_with_the_process_however_it_ends(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time;from pathlib import Path;"
            "from sessionvault.local.host import statelock;statelock.acquire(Path(sys.argv[1]));"
            "print('held',flush=True);time.sleep(60)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    assert statelock.holder(tmp_path) == holder.pid
    with pytest.raises(StateInUse, match=f"pid {holder.pid}"):
        statelock.acquire(tmp_path)
    holder.kill()  # no clean-up code runs
    holder.wait()
    assert statelock.holder(tmp_path) is None
    statelock.acquire(tmp_path).release()


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("postgresql://sv@10.255.255.1:5432/sv", "10.255.255.1:5432"),  # blackholed: a timeout
        ("postgresql://sv@127.0.0.1:1/sv", "127.0.0.1:1"),  # refused at once
    ],
)
def test_serve_with_an_unreachable_database_fails_within_10_s(tmp_path: Path, url: str, host: str) -> None:
    started = time.monotonic()
    import base64

    settings = {
        "DATABASE_URL": url,
        "SESSIONVAULT_MASTER_KEY": base64.b64encode(os.urandom(32)).decode(),
        "SESSIONVAULT_AUDIT_SALT": "a-test-salt-of-some-length",
    }
    done = sessionvault(tmp_path / "unused", "serve", "--port", str(free_port()), timeout=30, **settings)
    assert time.monotonic() - started < 10 + 5  # interpreter start-up and imports on a slow runner
    assert done.returncode == 2, done.stderr
    assert f"cannot reach the database at {host}" in done.stderr
    assert "serving" not in done.stdout
    assert not (tmp_path / "unused").exists()  # no state folder for an external database


def test_read_only_lookups_never_create_a_state_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "typo"
    monkeypatch.setenv("SESSIONVAULT_HOME", str(missing))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    with pytest.raises(Exception, match=f"no SessionVault state in {missing}") as caught:
        target.current(create=False)
    assert "SESSIONVAULT_HOME" in str(caught.value) and "does not exist" in str(caught.value)
    assert not missing.exists()


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("sessionvault 0.")
