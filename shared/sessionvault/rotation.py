"""Key rotation: re-wrap every user's DEK under a new master key or KMS key. Sessions are not
re-encrypted (the DEKs do not change). Resumable and idempotent: each user is moved in its own
transaction, only if still under an old key, so a re-run picks up where a stopped one ended."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sessionvault.db import Database
from sessionvault.keyprovider import KeyProvider, WrappedKey

log = logging.getLogger(__name__)

_MOVE = "UPDATE users SET dek_wrapped = %s, key_id = %s WHERE id = %s AND key_id = %s"


def rewrap_all(db: Database, target: KeyProvider, source_for: Callable[[str], KeyProvider]) -> dict[str, int]:
    """Move every DEK not yet under `target.key_id`; `source_for(key_id)` unwraps the old ones."""
    with db.identity() as conn:
        users = conn.execute(
            "SELECT id::text AS id, dek_wrapped, key_id FROM users WHERE key_id <> %s", (target.key_id,)
        ).fetchall()
    moved = failed = 0
    for user in users:
        old = WrappedKey.from_row(user)
        try:
            dek = source_for(old.key_id).unwrap(user["id"], old)
        except Exception as exc:  # one unreadable DEK must not stop everyone else's rotation
            failed += 1
            log.error(
                "rotation skipped a user", extra={"user_id": user["id"], "error_type": type(exc).__name__}
            )
            continue
        new = target.wrap(user["id"], dek)
        with db.identity() as conn:
            moved += conn.execute(_MOVE, (new.blob, new.key_id, user["id"], old.key_id)).rowcount
    with db.identity() as conn:
        left = conn.execute(
            "SELECT count(*) AS n FROM users WHERE key_id <> %s", (target.key_id,)
        ).fetchone()["n"]
    return {"rewrapped": moved, "failed": failed, "remaining": left}
