"""A head's search terms (keyed tokens, migration 0022) written outside a save: by a re-key,
which changes the key they are made under, and by the `index_terms` task, for heads saved
before there were terms. A save writes its own in its flight (`db.saves`)."""

from __future__ import annotations

from typing import Any

from sessionvault.db.pool import Connection, Database

Terms = tuple[tuple[bytes, int], ...]

_UNINDEXED = """
SELECT s.id, s.name, s.version, v.seal_id, v.nonce, v.ciphertext
FROM sessions s JOIN session_versions v ON v.session_id = s.id AND v.version = s.version
WHERE s.user_id = %s AND s.terms_indexed IS NULL
ORDER BY s.updated_at DESC LIMIT %s
"""
# Only for the head version they were made from: a save since brought its own.
_REPLACE = """
WITH head AS (SELECT id FROM sessions WHERE id = %(id)s AND version = %(version)s),
gone AS (DELETE FROM session_terms t USING head WHERE t.session_id = head.id),
marked AS (UPDATE sessions s SET terms_indexed = true FROM head WHERE s.id = head.id)
INSERT INTO session_terms (session_id, user_id, token, tf)
SELECT head.id, %(user_id)s, t.token, t.tf
FROM head, unnest(%(tokens)s::bytea[], %(tfs)s::smallint[]) AS t (token, tf)
"""


def unindexed(db: Database, user_id: str, limit: int) -> list[dict[str, Any]]:
    """Up to `limit` head versions (id, name, version and their ciphertext) with no terms yet."""
    with db.tenant(user_id) as conn:
        return conn.execute(_UNINDEXED, (user_id, limit)).fetchall()


def replace(conn: Connection, user_id: str, row: dict[str, Any], terms: Terms) -> None:
    """`row`'s head version's terms, in place of whatever it had, in the caller's transaction."""
    params = {
        "id": row["id"],
        "version": row["version"],
        "user_id": user_id,
        "tokens": [token for token, _ in terms],
        "tfs": [tf for _, tf in terms],
    }
    conn.execute(_REPLACE, params)


def store(db: Database, user_id: str, indexed: list[tuple[dict[str, Any], Terms]]) -> int:
    """Each row's terms, in one tenant transaction; returns how many heads."""
    with db.tenant(user_id) as conn:
        for row, terms in indexed:
            replace(conn, user_id, row, terms)
    return len(indexed)
