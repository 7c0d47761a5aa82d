"""Sessions that lack a vector of the current embedding model, for the re-embed job.

A failed row backs off (10 min, 20, 40, ... at most a day) and is never given up: a provider
outage delays rows, it does not park them. Rows that failed least come first, so a row the
provider always refuses cannot take every batch. A save resets the back-off."""

from __future__ import annotations

from typing import Any

from pgvector import Vector

from sessionvault.db.pool import Database

_STALE = """
SELECT s.id, s.name, s.version, v.seal_id, v.nonce, v.ciphertext
FROM sessions s JOIN session_versions v ON v.session_id = s.id AND v.version = s.version
WHERE s.user_id = %s AND (s.embedding IS NULL OR s.embedding_model IS DISTINCT FROM %s)
  AND (s.embed_retry_at IS NULL OR s.embed_retry_at <= now())
ORDER BY s.embed_failures, s.updated_at DESC LIMIT %s
"""
# Only if nobody saved a newer version meanwhile: that save brought its own vector.
_SET = "UPDATE sessions SET embedding = %s, embedding_model = %s WHERE id = %s AND version = %s"
_FAILED = """
UPDATE sessions SET embed_failures = embed_failures + 1,
    embed_retry_at = now() + least(interval '1 day', interval '10 minutes' * 2 ^ least(embed_failures, 10))
WHERE id = %s AND version = %s
"""


def stale(db: Database, user_id: str, model: str, limit: int) -> list[dict[str, Any]]:
    """Up to `limit` head versions (id, name, version, nonce, ciphertext) due for a vector."""
    with db.tenant(user_id) as conn:
        return conn.execute(_STALE, (user_id, model, limit)).fetchall()


def store_vector(db: Database, user_id: str, row: dict[str, Any], vector: list[float], model: str) -> None:
    with db.tenant(user_id) as conn:
        conn.execute(_SET, (Vector(vector), model, row["id"], row["version"]))


def back_off(db: Database, user_id: str, row: dict[str, Any]) -> None:
    with db.tenant(user_id) as conn:
        conn.execute(_FAILED, (row["id"], row["version"]))
