"""Turning automatic checkpoints off: everywhere (`SESSIONVAULT_CAPTURE=off` where the client
runs, or `capture = false` in config.toml) or for one repo (`sessionvault capture off` inside
it, kept in the state folder)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sessionvault.local.config import OPTIONS, Config

ENV = OPTIONS["capture"].env
FILE = "capture.json"  # {"off": [repo, ...]}


def disabled(cfg: Config, repo: str) -> str:
    """Why capture is off for `repo` ("" when it is on)."""
    capture = cfg.values["capture"]
    if not capture.value and capture.source == f"${ENV}":
        return f"{ENV}={cfg.env[ENV]}"
    if not capture.value:
        return f"capture = false in {capture.source}"
    if repo in _off_repos(cfg.state):
        return f"turned off for {repo} (`sessionvault capture on` turns it back on)"
    return ""


def set_repo(state: Path, repo: str, on: bool) -> None:
    off = [r for r in _off_repos(state) if r != repo] + ([] if on else [repo])
    state.mkdir(parents=True, exist_ok=True)
    aside = state / f".{FILE}.{os.getpid()}.tmp"
    aside.write_text(json.dumps({"off": sorted(off)}, indent=2) + "\n")
    os.replace(aside, state / FILE)


def _off_repos(state: Path) -> list[str]:
    try:
        off = json.loads((state / FILE).read_text()).get("off", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [r for r in off if isinstance(r, str)] if isinstance(off, list) else []
