"""`sessionvault link`: put this environment's `sessionvault` on PATH (~/.local/bin), what
`make dev` runs once per virtualenv (sessionvault.local.setup.link)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from sessionvault.errors import ConfigError
from sessionvault.local.host import command
from sessionvault.local.setup import link as linking


def _run_link(args: argparse.Namespace) -> int:
    program = command.script()
    if program is None:
        raise ConfigError(
            "no `sessionvault` script beside this Python to link (run it from its virtualenv:"
            " .venv/bin/sessionvault link)"
        )
    done = linking.link(program, home=Path.home(), path_var=os.environ.get("PATH", os.defpath))
    print("\n".join(done.lines))
    return 0 if done.ok else 1


DESCRIPTION = """\
Put this environment's `sessionvault` on PATH: a symlink in ~/.local/bin (the folder pip, pipx
and uv use for a user's commands). `make dev` runs it once per virtualenv.

Only a missing entry is made: a file, or a link to anything else (another checkout, a pipx
install), is left alone and named. Undo with `rm ~/.local/bin/sessionvault`. The hooks and the
bridge that `connect` writes name this environment's script by its full path, so they work
with or without the link."""


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "link",
        help="put this sessionvault on PATH: a symlink in ~/.local/bin (make dev does it once)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=_run_link)
