"""Key rotation: re-wrap every user's DEK under a new master key or KMS key. Sessions are not
re-encrypted (the DEKs do not change). Resumable and idempotent: each user is moved in its own
transaction, only if still under an old key, so a re-run picks up where a stopped one ended."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sessionvault.core.keys import KeyProvider, WrappedKey
from sessionvault.db import identity
from sessionvault.db.pool import Database

log = logging.getLogger(__name__)


def rewrap_all(db: Database, target: KeyProvider, source_for: Callable[[str], KeyProvider]) -> dict[str, int]:
    """Move every DEK not yet under `target.key_id`; `source_for(key_id)` unwraps the old ones."""
    moved = failed = 0
    for user in identity.users(db, not_under=target.key_id):
        old = WrappedKey.from_row(user)
        try:
            dek = source_for(old.key_id).unwrap(user["id"], old)
        except Exception as exc:  # one unreadable DEK must not stop everyone else's rotation
            failed += 1
            log.error(
                "rotation skipped a user", extra={"user_id": user["id"], "error_type": type(exc).__name__}
            )
            continue
        moved += identity.rewrap(db, user["id"], old.key_id, target.wrap(user["id"], dek))
    left = len(identity.users(db, not_under=target.key_id))
    return {"rewrapped": moved, "failed": failed, "remaining": left}
