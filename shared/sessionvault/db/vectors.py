"""A space's sealed vectors (migration 0023, core/vectors.py): what a search reads of them in
its one flight (the segments this process has not opened and the delta), the heads its best
matches are, and the writes: a compaction's new segments, the re-embed and sealing tasks'
vectors, a re-key's. Every writer of `vector_seq` and every compaction holds the space's
usage-row lock, so a change is never older than the segments yet missing from them."""

from __future__ import annotations

from typing import Any

from sessionvault.db.pool import Connection, Cursor
from sessionvault.db.saves import ENSURE_USAGE

Row = dict[str, Any]

# The binding a head's sealed vector is opened with (core/crypto.vector_aad).
BINDING = "coalesce(s.seal_id::text, s.id::text || ':' || s.version) AS binding"
_THROUGH = (
    "coalesce((SELECT max(through_seq) FROM vector_segments"
    " WHERE user_id = %(user_id)s AND model = %(model)s), 0)"
)
# The space's segments of the model, with the ciphertext of those this process has not opened
# (one statement: the listing and the opening read the same rows).
_SEGMENTS = """
SELECT id::text, through_seq, rows,
       CASE WHEN id = ANY(%(cached)s::uuid[]) THEN NULL ELSE nonce END AS nonce,
       CASE WHEN id = ANY(%(cached)s::uuid[]) THEN NULL ELSE ciphertext END AS ciphertext
FROM vector_segments WHERE user_id = %(user_id)s AND model = %(model)s
"""
# The heads changed since the segments were written (each replaces its segment row, with its
# vector when it has one of this model), and the heads still holding a plaintext vector.
_DELTA_COLUMNS = f"""
SELECT s.id::text, s.version, s.repo, {BINDING},
       CASE WHEN s.embedding_model = %(model)s THEN s.sealed_vector END AS sealed_vector,
       CASE WHEN s.embedding_model = %(model)s AND s.sealed_vector IS NULL THEN s.embedding::real[] END
           AS plain_vector
FROM sessions s"""
# Two index ranges, not one OR (which scans the space): (user_id, vector_seq), and the partial
# index of the heads still holding a plaintext vector (none once the move is done). A process
# that has read the space's segments before passes their `through_seq` (`since`): a value the
# planner sees, so the range is an index range; one that has not asks the database's own (a
# subquery, which the planner cannot see into: it may scan the space, once per process).
_SPACE = "WHERE s.user_id = %(user_id)s AND"
_PLAINTEXT_DELTA = f"{_DELTA_COLUMNS} {_SPACE} s.embedding IS NOT NULL AND s.sealed_vector IS NULL"
_DELTA = f"{_DELTA_COLUMNS} {_SPACE} s.vector_seq > {_THROUGH} UNION ALL {_PLAINTEXT_DELTA}"
_DELTA_SINCE = f"{_DELTA_COLUMNS} {_SPACE} s.vector_seq > %(since)s UNION ALL {_PLAINTEXT_DELTA}"
_HEADS = """
SELECT s.id::text, s.name, s.repo, s.version, v.saved_at, v.seal_id, v.nonce, v.ciphertext
FROM sessions s JOIN session_versions v ON v.session_id = s.id AND v.version = s.version
WHERE s.user_id = %(user_id)s AND s.id = ANY(%(ids)s::uuid[])
"""
_LOCK = "SELECT 1 FROM user_usage WHERE user_id = %(user_id)s FOR UPDATE"
_LIVE = f"""
SELECT s.id::text, s.version, s.repo, {BINDING}, s.sealed_vector
FROM sessions s
WHERE s.user_id = %(user_id)s AND s.embedding_model = %(model)s AND s.sealed_vector IS NOT NULL
ORDER BY s.id
"""
_LAST_SEQ = "SELECT coalesce(max(vector_seq), 0) AS seq FROM sessions WHERE user_id = %(user_id)s"
_DROP = "DELETE FROM vector_segments WHERE user_id = %(user_id)s AND model = %(model)s"
_ADD = """
INSERT INTO vector_segments (id, user_id, model, rows, through_seq, nonce, ciphertext)
VALUES (%(id)s, %(user_id)s, %(model)s, %(rows)s, %(through)s, %(nonce)s, %(ciphertext)s)
"""
# A head's new vector (a re-embed, the sealing of a plaintext one), if it is still that version.
_STORE = """
UPDATE sessions SET sealed_vector = %(sealed)s, embedding = NULL, embedding_model = %(model)s,
    vector_seq = nextval('session_vector_seq'), embed_failures = 0, embed_retry_at = NULL
WHERE id = %(id)s AND version = %(version)s
"""
_PLAINTEXT = f"""
SELECT s.id::text, s.version, {BINDING}, s.embedding_model, s.embedding::real[] AS plain_vector
FROM sessions s WHERE s.user_id = %s AND s.embedding IS NOT NULL LIMIT %s
"""


def reading(conn: Connection, params: dict[str, Any]) -> tuple[Cursor, Cursor]:
    """A search's vector statements, queued in its transaction: the space's segments of the
    model (with the ciphertext of those not in `cached`), the delta (past `since` when given)."""
    delta = _DELTA if params.get("since") is None else _DELTA_SINCE
    return conn.execute(_SEGMENTS, params), conn.execute(delta, params)


def heads(conn: Connection, user_id: str, ids: list[str]) -> Cursor:
    """The heads (with their head version's ciphertext) of `ids` that still exist."""
    return conn.execute(_HEADS, {"user_id": user_id, "ids": ids})


def lock(conn: Connection, user_id: str) -> None:
    """The space's usage-row lock, for this transaction (saves hold it while they write)."""
    conn.execute(ENSURE_USAGE, {"user_id": user_id})
    conn.execute(_LOCK, {"user_id": user_id}).fetchone()


def live(conn: Connection, user_id: str, model: str) -> tuple[list[Row], int]:
    """Under the lock: every head's sealed vector of `model`, and the last `vector_seq` drawn."""
    params = {"user_id": user_id, "model": model}
    rows = conn.execute(_LIVE, params).fetchall()
    last = conn.execute(_LAST_SEQ, params).fetchone()
    return rows, int(last["seq"]) if last else 0


def replace_segments(conn: Connection, user_id: str, model: str, through: int, made: list[Row]) -> None:
    """The space's segments of `model`: `made` (id, rows, nonce, ciphertext) in place of the old."""
    conn.execute(_DROP, {"user_id": user_id, "model": model})
    for segment in made:
        conn.execute(_ADD, {**segment, "user_id": user_id, "model": model, "through": through})


def drop_segments(conn: Connection, user_id: str) -> None:
    """Every segment of the space (a re-key: they are sealed under the old key)."""
    conn.execute("DELETE FROM vector_segments WHERE user_id = %(user_id)s", {"user_id": user_id})


def store(conn: Connection, row: Row, sealed: bytes, model: str) -> None:
    """`row`'s head vector, sealed, in place of a plaintext one or none (under the lock)."""
    conn.execute(_STORE, {"sealed": sealed, "model": model, "id": row["id"], "version": row["version"]})


# A model's vectors changed since its segments: a head's vector is newer than them, or they hold
# another number of heads than have a vector of the model (a session deleted, or moved to
# another model: its vector is dropped from the segments by the compaction this asks for).
_CHANGED = """
WITH live AS (
    SELECT s.embedding_model AS model, count(*) AS heads, max(s.vector_seq) AS last_seq
    FROM sessions s WHERE s.user_id = %(user_id)s AND s.sealed_vector IS NOT NULL
    GROUP BY s.embedding_model
),
segments AS (
    SELECT model, sum(rows) AS heads, max(through_seq) AS through
    FROM vector_segments WHERE user_id = %(user_id)s GROUP BY model
)
SELECT coalesce(live.model, segments.model) AS model
FROM live FULL JOIN segments USING (model)
WHERE live.heads IS DISTINCT FROM segments.heads OR live.last_seq > segments.through
"""


def changed_models(conn: Connection, user_id: str) -> list[str]:
    """The models whose segments no longer hold exactly the space's head vectors."""
    return [row["model"] for row in conn.execute(_CHANGED, {"user_id": user_id}).fetchall()]


def plaintext(conn: Connection, user_id: str, limit: int) -> list[Row]:
    """Up to `limit` heads still holding a plaintext vector (saved before migration 0023)."""
    return conn.execute(_PLAINTEXT, (user_id, limit)).fetchall()
