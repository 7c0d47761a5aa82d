"""One line of `sessionvault doctor` (`Check`), and the checks every part of it shares: does a
`sessionvault` command a client will run resolve and run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sessionvault.local.host import command


@dataclass(frozen=True)
class Check:
    ok: bool | None  # None: a tip, not a problem
    text: str
    fix: str | None = None  # the one command that fixes it

    def lines(self) -> list[str]:
        mark = {True: "✓", False: "✗", None: "·"}[self.ok]
        return [f"{mark} {self.text}"] + ([f"    fix: {self.fix}"] if self.fix else [])


def shown(path: Path, home: Path) -> str:
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def check_command(argv: list[str] | None, sub: list[str], what: str, fix: str) -> list[Check]:
    """Does the `sessionvault` a client will run resolve, and does it run? A bare name that
    resolves only here is a tip: the client may start with another PATH."""
    if not argv:
        return [Check(False, f"{what} is not a sessionvault command", fix)]
    probe = command.probe([*argv, *sub])
    if not probe.ok:
        return [Check(False, f"{what} does not run: {probe.detail}", fix)]
    line = " ".join(argv)
    if os.sep not in argv[0]:
        return [
            Check(True, f"{what} `{line}` runs here"),
            Check(
                None,
                f"{what} is a bare `{argv[0]}`: a client started with another PATH "
                f"will not find it; pin the absolute path ({fix})",
            ),
        ]
    return [Check(True, f"{what} `{line}` runs")]
