"""When each client's hooks last ran here, and how the checkpoint hook last ended: what
`sessionvault doctor` reads to tell a hook that fires from one that silently never does (the
complaint users of capture tools raise most).

One small JSON file in the state folder, `hooks-fired.json`:
`{"<client>": {"session-start": <unix time>, "checkpoint": <unix time>, "saved": <unix time>,
"outcome": "<how the last checkpoint hook ended>"}}`. Written by `sessionvault hook ...` after
its work (never before: a hook that fails to record still did its job), atomically, 0600.
Recording must never fail a hook: every error is swallowed. Only the standard library."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FILE = "hooks-fired.json"
MAX_BYTES = 65_536  # a larger file is not ours to parse: it is started again
MAX_CLIENTS = 64


def read(state: Path) -> dict[str, dict[str, Any]]:
    """Every client's record; {} when there is none or it does not parse."""
    try:
        with (state / FILE).open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError:
        return {}
    if len(raw) > MAX_BYTES:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, dict)}


def record(state: Path, client: str, event: str, more: Mapping[str, Any] | None = None) -> None:
    """`client`'s `event` hook ran now (with `more` to keep). Never raises."""
    try:
        data = read(state)
        entry = {**data.get(client[:100], {}), event: time.time(), **(more or {})}
        data[client[:100]] = entry
        if len(data) > MAX_CLIENTS:
            return  # not a state folder of ours to grow
        state.mkdir(parents=True, exist_ok=True, mode=0o700)
        aside = state / f".{FILE}.{os.getpid()}.tmp"
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(aside, state / FILE)
    except Exception:
        pass
