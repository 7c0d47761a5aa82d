"""Secrets kept as 0600 files in the local state folder: the master key and the audit salt."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path

from sessionvault.core import crypto
from sessionvault.core.keys import parse_master_key


def read_or_create_secret(path: Path, make: Callable[[], str]) -> str:
    """The value in a 0600 file, created once with `make()`. The file appears whole or not at
    all (written aside, then linked into place), so a racing reader never sees it half-written."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        aside = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(make() + "\n")
        try:
            os.link(aside, path)  # fails if another process got there first: theirs wins
        except FileExistsError:
            pass
        finally:
            aside.unlink()
    return path.read_text().strip()


def load_or_create_master_key(path: Path) -> bytes:
    """Read the 0600 key file, creating it once with a random key."""
    return parse_master_key(
        read_or_create_secret(path, lambda: base64.b64encode(os.urandom(crypto.KEY_BYTES)).decode())
    )
