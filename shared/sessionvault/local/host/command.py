"""How a client starts the `sessionvault` command: by an absolute path found at `connect` time.

A client (Claude Code's hook shell, Claude Desktop's stdio launcher) runs with its own `PATH`,
which usually does not hold the project's virtualenv. So the hook and the stdio bridge entry
name the command by the path that works right now: the `sessionvault` script next to the
running interpreter (the venv this code runs from), else the one on `PATH`, else the
interpreter itself with `-m sessionvault.cli.main`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

NAME = "sessionvault"
MODULE = "sessionvault.cli.main"
RUN_TIMEOUT_S = 10.0


def script() -> Path | None:
    """The `sessionvault` script of the environment this code runs in (its venv's bin folder),
    when it has one: found without resolving the interpreter symlink, which would leave the
    venv. Run through a link on PATH (~/.local/bin/sessionvault), it is still the venv's."""
    beside = Path(os.path.abspath(sys.executable)).parent / NAME
    return beside if beside.is_file() and os.access(beside, os.X_OK) else None


def sessionvault_argv() -> list[str]:
    """The argv prefix that runs `sessionvault` from any environment, absolute paths only."""
    beside = script()
    if beside is not None:
        return [str(beside)]
    found = shutil.which(NAME)
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", MODULE]


def shell_command(*args: str) -> str:
    """The command line a client's shell runs: `/abs/sessionvault hook session-start ...`."""
    return shlex.join([*sessionvault_argv(), *args])


@dataclass(frozen=True)
class Probe:
    ok: bool
    detail: str  # what was run and what happened, for one doctor line


def probe(argv: list[str], env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT_S) -> Probe:
    """Whether `argv` (e.g. `[cmd, "hook", "session-start", "--help"]`) resolves and exits 0.

    A bare program name is looked up on `PATH` of `env` (this process's by default)."""
    if not argv:
        return Probe(False, "empty command")
    program = argv[0]
    path_var = (env or os.environ).get("PATH", os.defpath)
    resolved = program if os.sep in program else shutil.which(program, path=path_var)
    if not resolved or not os.access(resolved, os.X_OK):
        return Probe(False, f"{program}: not found")
    try:
        done = subprocess.run(
            [resolved, *argv[1:]],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Probe(False, f"{shlex.join(argv)}: no answer within {timeout:g} s")
    except OSError as exc:
        return Probe(False, f"{program}: cannot run ({exc.strerror or exc})")
    if done.returncode != 0:
        return Probe(False, f"{shlex.join(argv)}: exit {done.returncode}")
    return Probe(True, f"{resolved} runs")
