"""Where Codex keeps its rollouts, and finding the one of a session: by its id, or the newest
begun in a folder (for a caller without the hook's `transcript_path`)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .transcript import MAX_LINE, json_value, written

_SCANNED = 200  # session files `locate` opens, newest first, looking for one begun in `cwd`
_SESSION_ID = re.compile(r"[0-9A-Fa-f-]{8,64}")


def codex_home(home: Path, env: Mapping[str, str] | None = None) -> Path:
    """Where Codex keeps its state: $CODEX_HOME when set, else ~/.codex
    (https://developers.openai.com/codex/environment-variables: "Sets the root for Codex state,
    including config, auth, logs, sessions, ...", default ~/.codex)."""
    given = (os.environ if env is None else env).get("CODEX_HOME", "").strip()
    return Path(given).expanduser() if given else home / ".codex"


def locate(home: Path, cwd: Path, session_id: str = "", state: Path | None = None) -> Path | None:
    """The rollout of `session_id`, or without one the most recently written rollout of a
    session begun in `cwd`; None when there is none. A Codex hook gets the exact path as
    `transcript_path` in its input (https://developers.openai.com/codex/hooks): prefer that;
    this is for a caller without one. `state` is Codex's state folder (`codex_home`), by
    default ~/.codex under `home`: $CODEX_HOME is not read here, so a caller decides.

    Rollouts sit in date folders of the session's start, not by project, so without an id the
    newest files are opened (at most _SCANNED) and their `session_meta` cwd compared. Archived
    sessions (`archived_sessions/`) are not looked at."""
    sessions = (state or home / ".codex") / "sessions"
    if not sessions.is_dir():
        return None
    if session_id:
        if not _SESSION_ID.fullmatch(session_id):
            return None  # not a UUID: nothing to glob for
        found = sorted(sessions.glob(f"*/*/*/rollout-*-{session_id}.jsonl"))
        return found[-1] if found else None
    newest = sorted(_rollouts(sessions), key=written, reverse=True)[:_SCANNED]
    want = _resolved(cwd)
    return next((f for f in newest if _began_in(f) == want), None)


def _rollouts(sessions: Path) -> Iterator[Path]:
    return (f for f in sessions.glob("*/*/*/rollout-*.jsonl") if f.is_file())


def _resolved(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return str(path)


def _began_in(path: Path) -> str:
    """The folder the session of a rollout began in, as `_resolved` gives it ("" unknown)."""
    cwd = _session_meta(path).get("cwd")
    return _resolved(Path(cwd)) if isinstance(cwd, str) and cwd else ""


def _session_meta(path: Path) -> dict[str, Any]:
    """The `session_meta` payload of a rollout (its first line, some 20 kB of instructions),
    or {}."""
    try:
        with path.open("rb") as handle:
            first = json_value(handle.readline(MAX_LINE))
    except OSError:
        return {}
    if not isinstance(first, dict) or first.get("type") != "session_meta":
        return {}
    payload = first.get("payload")
    return payload if isinstance(payload, dict) else {}
