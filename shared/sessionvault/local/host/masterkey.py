"""Local mode's master-key rotation: re-wrap every DEK under a new master key, then retire the
old key file. Resumable: the new key is kept as `master.key.next` until every user moved."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessionvault.core.keys import LocalKeyProvider
from sessionvault.errors import ConfigError
from sessionvault.jobs import rotation
from sessionvault.local.host.secretfile import load_or_create_master_key
from sessionvault.runtime import Runtime

PID_FILE = "server.pid"


def claim(home: Path) -> Path:
    """Mark the state folder as used by this process's server (removed when it stops)."""
    marker = home / PID_FILE
    marker.write_text(f"{os.getpid()}\n")
    return marker


def server_using(home: Path) -> int | None:
    """The pid of a live server using this state folder, if any."""
    try:
        pid = int((home / PID_FILE).read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid if pid != os.getpid() else None


def rotate(rt: Runtime, home: Path) -> dict[str, Any]:
    """The rotation's counts, plus `retired` (the old key's file) when it completed. Refused
    while a server uses the folder: it holds the old key and would fail every request after."""
    pid = server_using(home)
    if pid is not None:
        raise ConfigError(f"a SessionVault server (pid {pid}) is using {home}: stop it, then rotate")
    current, upcoming = home / "master.key", home / "master.key.next"
    old = LocalKeyProvider(load_or_create_master_key(current))
    new = LocalKeyProvider(load_or_create_master_key(upcoming))  # kept across a resumed run
    sources = {old.key_id: old, new.key_id: new}
    result: dict[str, Any] = rotation.rewrap_all(rt.db, new, lambda key_id: sources[key_id])
    if result["remaining"]:
        return result
    retired = home / f"master.key.retired-{datetime.now(UTC):%Y%m%d%H%M%S}"
    current.rename(retired)
    upcoming.rename(current)
    return {**result, "retired": str(retired)}
