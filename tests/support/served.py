"""`sessionvault dev` or `serve` as a process of its own, started as a user starts it, and
stopped as Ctrl-C stops it (the server stops its embedded database on the way out)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BANNER = "SessionVault serving"  # what the CLI prints once it serves


@contextmanager
def serving(
    argv: list[str], env: dict[str, str], log: Path, timeout_s: float = 180, program: str | None = None
) -> Iterator[subprocess.Popen[str]]:
    """The CLI run with `argv`, its output in `log`, once it printed that it serves; `program`:
    an installed `sessionvault` script instead of this interpreter's package."""
    with log.open("w") as out:
        server = subprocess.Popen(
            [*([program] if program else [sys.executable, "-m", "sessionvault.cli.main"]), *argv],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        deadline = time.monotonic() + timeout_s
        while BANNER not in log.read_text():
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"{argv[0]} did not start"
            time.sleep(0.2)
        yield server
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
