"""The hooks' own API key: the one with the `checkpoint` scope (core/apikeys.HOOK_SCOPES).

A model-facing key (the one in a client's MCP config, $SESSIONVAULT_API_KEY) cannot save
automatic checkpoints: a checkpoint save prunes older ones, so a model holding that power could
destroy them. The hooks use a key of their own, kept beside the state it serves in a 0600 file
(`hooks.key`: a JSON object of server URL -> key, so a key made for one server is never sent
to another), or given as $SESSIONVAULT_HOOK_KEY. `connect --hooks` and `sessionvault dev` write
it (local/setup/hook_keys.py). Without one the hooks fall back on $SESSIONVAULT_API_KEY: the
session-start hook still loads, and checkpoints wait in the spool until a hook key is there."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from sessionvault.names import HOOK_KEY_ENV, KEY_ENV

FILE = "hooks.key"


def saved(state: Path, url: str) -> str:
    """The key saved for `url` in the state folder's hooks.key; "" when there is none."""
    try:
        keys = json.loads((state / FILE).read_text())
    except (OSError, ValueError):
        return ""
    key = keys.get(url) if isinstance(keys, dict) else None
    return key.strip() if isinstance(key, str) else ""


def for_hooks(env: Mapping[str, str], state: Path, url: str) -> str:
    """The key a hook sends to `url`: $SESSIONVAULT_HOOK_KEY, else the one saved for `url`,
    else $SESSIONVAULT_API_KEY (which loads, but saves no checkpoint); "" when none is set."""
    return env.get(HOOK_KEY_ENV, "").strip() or saved(state, url) or env.get(KEY_ENV, "").strip()


def save(state: Path, url: str, key: str) -> Path:
    """Keep `key` as the hooks' key for `url` (other servers' keys stay); the file is 0600,
    written aside and renamed so a hook never reads half of it."""
    path = state / FILE
    try:
        keys = json.loads(path.read_text())
    except (OSError, ValueError):
        keys = {}
    keys = {**(keys if isinstance(keys, dict) else {}), url: key}
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    aside = path.with_name(f".{FILE}.{os.getpid()}.tmp")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(keys, f, indent=2)
    os.replace(aside, path)
    return path
