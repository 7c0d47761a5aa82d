"""`sessionvault backup FILE` and `sessionvault restore FILE`: the embedded database of the state
folder ($SESSIONVAULT_HOME, default ~/.sessionvault) into one file and back (local/host/backup.py).
The master key is never in the file."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from sessionvault.errors import ConfigError
from sessionvault.settings import default_home


def _embedded_only(command: str) -> None:
    if os.environ.get("DATABASE_URL"):
        raise ConfigError(
            f"`sessionvault {command}` is for the embedded database; with DATABASE_URL set (Neon, RDS)"
            " use the provider's point-in-time recovery, or `sessionvault export` (docs/backup.md)"
        )


def _size(path: Path) -> str:
    size = float(path.stat().st_size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    return ""  # unreachable


def _counted(counts: dict[str, int]) -> str:
    return f"{counts['users']} user(s), {counts['sessions']} session(s), {counts['versions']} version(s)"


def cmd_backup(args: argparse.Namespace) -> int:
    from sessionvault.local.host import backup

    _embedded_only("backup")
    home, dest = default_home(), Path(args.file).expanduser().absolute()
    result = backup.backup(home, dest)
    m = result.manifest
    live = "while a server was running" if m["server_running"] else "(no server was running)"
    print(f"Backed up {home} to {dest} {live}: {_counted(m['counts'])}, {_size(dest)}.")
    print(backup.NOT_INCLUDED)
    fingerprint = m["master_key_fingerprint"]["sha256"][:16]
    print(f"Master key fingerprint: {fingerprint}... (a restore checks the key against it)")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from sessionvault.local.host import backup, restore

    _embedded_only("restore")
    home, source = default_home(), Path(args.file).expanduser().absolute()
    result = restore.restore(home, source)
    m = result.manifest
    print(f"Restored {source} (taken {m['created_at']}) into {home}: {_counted(m['restored_counts'])}.")
    print(
        "The backup holds no master key; the one given authenticates it and is in"
        f" {home / backup.KEY_FILE} now. A new audit salt is made on the first start."
    )
    print("Start the server on it: sessionvault dev")
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "backup",
        help="local mode: dump the embedded database into FILE (consistent while the server runs;"
        " the master key is NOT included)",
    )
    sp.add_argument("file", metavar="FILE", help="the backup file to write (must not exist)")
    sp.set_defaults(func=cmd_backup)
    sp = sub.add_parser(
        "restore",
        help="local mode: restore a backup into an empty state folder ($SESSIONVAULT_HOME); needs the"
        " master key it was made with",
    )
    sp.add_argument("file", metavar="FILE", help="a file written by `sessionvault backup`")
    sp.set_defaults(func=cmd_restore)
