"""Heads whose preview is still plaintext (saved before migration 0015), for the
`seal_previews` maintenance task: read a batch, store each preview sealed and empty the
plaintext column, one tenant transaction each way."""

from __future__ import annotations

from collections.abc import Sequence

from sessionvault.db.pool import Database
from sessionvault.db.sessions import Row

_PLAINTEXT = """
SELECT id, name, version, seal_id, preview FROM sessions
WHERE user_id = %s AND sealed_preview IS NULL AND preview <> ''
ORDER BY id LIMIT %s
"""
# Only the head as it was read: a save meanwhile stored its own sealed preview (and a new
# seal_id or version), and a second run of the task finds the row sealed already.
_SEAL = """
UPDATE sessions SET sealed_preview = %s, preview = ''
WHERE id = %s AND version = %s AND seal_id IS NOT DISTINCT FROM %s
  AND sealed_preview IS NULL AND preview = %s
"""


def plaintext(db: Database, user_id: str, limit: int) -> list[Row]:
    """Up to `limit` of the user's heads (id, name, version, seal_id, preview) whose preview
    is stored in plaintext."""
    with db.tenant(user_id) as conn:
        cur = conn.execute(_PLAINTEXT, (user_id, limit))
    return cur.fetchall()


def store_sealed(db: Database, user_id: str, sealed: Sequence[tuple[Row, bytes]]) -> int:
    """Each head's preview replaced by its sealed form, in one flight; returns how many heads
    changed (a head saved again since it was read is left to its save)."""
    with db.tenant(user_id) as conn:
        cursors = [
            conn.execute(_SEAL, (blob, row["id"], row["version"], row["seal_id"], row["preview"]))
            for row, blob in sealed
        ]
    return sum(max(cur.rowcount, 0) for cur in cursors)
