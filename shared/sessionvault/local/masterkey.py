"""Local mode's master-key rotation: re-wrap every DEK under a new master key, then retire the
old key file. Resumable: the new key is kept as `master.key.next` until every user moved."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessionvault.core.keys import LocalKeyProvider
from sessionvault.jobs import rotation
from sessionvault.local.secretfile import load_or_create_master_key
from sessionvault.runtime import Runtime


def rotate(rt: Runtime, home: Path) -> dict[str, Any]:
    """The rotation's counts, plus `retired` (the old key's file) when it completed."""
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
