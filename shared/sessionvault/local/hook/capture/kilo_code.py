"""Kilo Code's own record of a session (its CLI, `kilo` 7.x), read into a `Transcript` (client
"kilo-code").

Kilo Code's CLI is a fork of OpenCode and keeps OpenCode's store under its own name: one SQLite
database, `kilo.db`, in `$XDG_DATA_HOME/kilo/` (else `~/.local/share/kilo/`), with the same
tables and the same tools (`todowrite`, `write`, `edit`, `bash`, ...), checked on a real run of
7.7.9 (tests/fixtures/transcripts/kilo-code-7.7.9). So `opencode`'s reader reads it, bounded and
read-only as for OpenCode; what differs is the file, and that `kilo run "..."` keeps the prompt
as it was passed, double quotes included, which are taken off here."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from . import opencode
from .transcript import Transcript

CLIENT = "kilo-code"
DB_NAME = "kilo.db"


def db_path(home: Path, env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_DATA_HOME/kilo/kilo.db`, else `~/.local/share/kilo/kilo.db`."""
    env = os.environ if env is None else env
    return Path(env.get("XDG_DATA_HOME") or str(home / ".local" / "share")) / "kilo" / DB_NAME


def locate(
    home: Path, cwd: Path, session_id: str = "", env: Mapping[str, str] | None = None
) -> opencode.Stored | None:
    """As `opencode.locate`, in Kilo Code's database."""
    return opencode.locate(home, cwd, session_id, {opencode.DB_ENV: str(db_path(home, env).absolute())})


def read(found: opencode.Stored) -> Transcript:
    transcript = opencode.read(found.db, found.session_id)
    transcript.client = CLIENT
    asks = [_unquoted(ask) for ask in transcript.asks]
    transcript.asks.clear()
    transcript.asks.extend(asks)
    return transcript


def _unquoted(text: str) -> str:
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] == '"' else text
