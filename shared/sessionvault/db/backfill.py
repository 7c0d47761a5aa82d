"""Sessions that lack a vector of the current embedding model, for the re-embed job (a head
still holding a plaintext vector of the model is the `seal_vectors` task's, not this one's).

A failed row backs off (10 min, 20, 40, ... at most a day) and is never given up: a provider
outage delays rows, it does not park them. Rows that failed least come first, so a row the
provider always refuses cannot take every batch. A save resets the back-off."""

from __future__ import annotations

from typing import Any

from sessionvault.db import vectors
from sessionvault.db.pool import Database

_STALE = f"""
SELECT s.id, s.name, s.version, v.seal_id, v.nonce, v.ciphertext, {vectors.BINDING}
FROM sessions s JOIN session_versions v ON v.session_id = s.id AND v.version = s.version
WHERE s.user_id = %s
  AND ((s.sealed_vector IS NULL AND s.embedding IS NULL) OR s.embedding_model IS DISTINCT FROM %s)
  AND (s.embed_retry_at IS NULL OR s.embed_retry_at <= now())
ORDER BY s.embed_failures, s.updated_at DESC LIMIT %s
"""
_FAILED = """
UPDATE sessions SET embed_failures = embed_failures + 1,
    embed_retry_at = now() + least(interval '1 day', interval '10 minutes' * 2 ^ least(embed_failures, 10))
WHERE id = %s AND version = %s
"""


def stale(db: Database, user_id: str, model: str, limit: int) -> list[dict[str, Any]]:
    """Up to `limit` head versions (id, name, version, nonce, ciphertext) due for a vector."""
    with db.tenant(user_id) as conn:
        return conn.execute(_STALE, (user_id, model, limit)).fetchall()


def store_vector(db: Database, user_id: str, row: dict[str, Any], sealed: bytes, model: str) -> None:
    """The head's vector, sealed, only if nobody saved a newer version meanwhile (that save
    brought its own), under the space's usage-row lock (db/vectors.py)."""
    with db.tenant(user_id) as conn:
        vectors.lock(conn, user_id)
        vectors.store(conn, row, sealed, model)


def back_off(db: Database, user_id: str, row: dict[str, Any]) -> None:
    with db.tenant(user_id) as conn:
        conn.execute(_FAILED, (row["id"], row["version"]))
