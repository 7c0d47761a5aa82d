"""Commands `sessionvault deploy` runs: each printed before it runs; look-ups run in a dry run
too, steps that change something do not. A failed command stops the deploy with its exit code
and the tail of its error output."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from sessionvault.errors import DeployFailed

TAIL_LINES = 15  # stderr lines quoted when a step fails
LOOKUP_TIMEOUT_S = 120


def failed(argv: Sequence[str], code: int, tail: Sequence[str]) -> DeployFailed:
    quoted = "\n".join(f"  | {line}" for line in list(tail)[-TAIL_LINES:]) or "  (no error output)"
    return DeployFailed(
        f"`{shlex.join(argv)}` failed with exit code {code}; the end of its error output:\n{quoted}"
    )


@dataclass
class Shell:
    root: Path
    env: dict[str, str]
    out: TextIO
    dry_run: bool

    def show(self, argv: Sequence[str]) -> None:
        print(f"\n$ {shlex.join(argv)}", file=self.out, flush=True)

    def look(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str] | None:
        """Run a command that changes nothing (in a dry run too); None when it is not installed."""
        try:
            return subprocess.run(
                list(argv),
                cwd=self.root,
                env=self.env,
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=LOOKUP_TIMEOUT_S,
            )
        except (FileNotFoundError, PermissionError):
            return None
        except subprocess.TimeoutExpired:
            raise DeployFailed(f"`{shlex.join(argv)}` did not answer within {LOOKUP_TIMEOUT_S} s") from None

    def read(self, argv: Sequence[str]) -> str:
        """Print, run and return the stdout of a command that must succeed."""
        self.show(argv)
        done = self.look(argv)
        if done is None:
            raise DeployFailed(f"{argv[0]}: not found")
        if done.returncode:
            raise failed(argv, done.returncode, done.stderr.splitlines())
        return done.stdout

    def step(self, argv: Sequence[str]) -> None:
        """Print, then (unless a dry run) run a command that changes something, on this terminal:
        sam's prompts and progress show as they come, and its stderr is kept for the error."""
        self.show(argv)
        if self.dry_run:
            return
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        try:
            proc = subprocess.Popen(
                list(argv), cwd=self.root, env=self.env, stderr=subprocess.PIPE, text=True, errors="replace"
            )
        except FileNotFoundError:
            raise DeployFailed(f"{argv[0]}: not found") from None
        assert proc.stderr is not None
        for line in proc.stderr:
            sys.stderr.write(line)
            sys.stderr.flush()
            tail.append(line.rstrip("\n"))
        code = proc.wait()
        if code:
            raise failed(argv, code, tail)
