"""`sessionvault link`: this environment's `sessionvault` on PATH, as a symlink in ~/.local/bin
(the folder pip, pipx and uv use for a user's commands). `make dev` runs it once per virtualenv.

Only a missing entry is created, and only a link to this very script counts as ours: a file or
a link to anything else (another checkout, a pipx install) is left alone and named. Undo is
`rm ~/.local/bin/sessionvault`; `make dev` does not put it back (it links once per venv).
Hook and bridge entries are unaffected: they name the venv's script by its own absolute path
(`command.sessionvault_argv`), whichever way the command was started."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from sessionvault.local.host.command import NAME
from sessionvault.local.setup import profile

BIN = Path(".local") / "bin"


@dataclass(frozen=True)
class Linked:
    ok: bool  # the link is ours (made now or before)
    lines: list[str]


def _tilde(path: Path, home: Path) -> str:
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def link(program: Path, *, home: Path, path_var: str, shell: str | None = None) -> Linked:
    """Link home/.local/bin/sessionvault to `program` (absolute) unless something else is there;
    say what was done, how to undo it, and the profile line when the folder is not on PATH."""
    dest = home / BIN / NAME
    shown, undo = _tilde(dest, home), f"undo: rm {_tilde(dest, home)}"
    if dest.is_symlink() and Path(os.readlink(dest)) == program:
        lines = [f"{shown} already links to {program} ({undo})"]
    elif dest.exists() or dest.is_symlink():
        what = f"links to {os.readlink(dest)}" if dest.is_symlink() else "is not a link"
        lines = [
            f"left {shown} alone: it {what}, not to {program}.",
            f"  To run this checkout's instead: ln -sf {program} {shown}",
        ]
        return Linked(False, lines)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.symlink_to(program)
        lines = [f"linked {shown} -> {program}: `sessionvault` runs from any folder ({undo})"]
    return Linked(True, lines + _path_notes(dest, program, home, path_var, shell))


def _path_notes(dest: Path, program: Path, home: Path, path_var: str, shell: str | None) -> list[str]:
    folders = [os.path.normpath(os.path.expanduser(p)) for p in path_var.split(os.pathsep) if p]
    if str(dest.parent) not in folders:
        return [
            f"{_tilde(dest.parent, home)} is not on your PATH: add this line to {profile.profile(shell)},"
            " then open a new shell:",
            f"    {profile.path_line('$HOME/' + str(BIN), shell)}",
        ]
    first = shutil.which(NAME, path=path_var)
    if first and Path(first).resolve() != program.resolve():
        return [f"note: `{NAME}` on your PATH is {first}, which comes before {_tilde(dest.parent, home)}"]
    return []
