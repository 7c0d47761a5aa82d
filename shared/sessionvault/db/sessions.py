"""Data access for the tenant plane. Every function is one tenant transaction (`Database.tenant`,
pipelined), so RLS scopes it and it costs one flight to the database (a save costs two: the
ciphertext is bound to the row id and version the first one returns). The explicit user_id
filters are there for the indexes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pgvector import Vector

from sessionvault.db.pool import Connection, Cursor, Database

Row = dict[str, Any]
SUPPORTED_DIMS = (384, 1536)  # one partial HNSW index each (migration 0001)


@dataclass(frozen=True)
class Head:
    """The plaintext columns of a session's head row."""

    name: str
    repo: str
    preview: str
    client: str
    embedding: list[float] | None
    model: str | None


_UPSERT_HEAD = """
INSERT INTO sessions (user_id, name, repo, preview, client, version, embedding, embedding_model,
                      created_at, updated_at)
VALUES (%s, %s, %s, %s, %s, 1, %s, %s, clock_timestamp(), clock_timestamp())
ON CONFLICT (user_id, name) DO UPDATE SET
    repo = EXCLUDED.repo, preview = EXCLUDED.preview, client = EXCLUDED.client,
    version = sessions.version + 1, embedding = EXCLUDED.embedding,
    embedding_model = EXCLUDED.embedding_model, embed_failures = 0, embed_retry_at = NULL,
    updated_at = clock_timestamp()
RETURNING id, version, updated_at
"""
_INSERT_VERSION = """
INSERT INTO session_versions (session_id, user_id, version, nonce, ciphertext, client, saved_at)
VALUES (%s, %s, %s, %s, %s, %s, %s)
"""
_PRUNE_VERSIONS = "DELETE FROM session_versions WHERE session_id = %s AND version < %s"


def save(
    db: Database,
    user_id: str,
    head: Head,
    seal: Callable[[Row], tuple[bytes, bytes]],
    keep_previous: int,
) -> Row:
    """Create the session or bump its version, then store `seal(head row)` (nonce, ciphertext)
    as that version. The head's row lock serialises concurrent saves of one name;
    clock_timestamp(), not now(): a save that waited for the lock is the newer one."""
    model = head.model if head.embedding else None

    def work(conn: Connection) -> Row:
        row = conn.execute(
            _UPSERT_HEAD,
            (user_id, head.name, head.repo, head.preview, head.client, _vec(head.embedding), model),
        ).fetchone()
        assert row is not None  # INSERT ... RETURNING always returns the row
        nonce, ciphertext = seal(row)
        conn.execute(
            _INSERT_VERSION,
            (row["id"], user_id, row["version"], nonce, ciphertext, head.client, row["updated_at"]),
        )
        conn.execute(_PRUNE_VERSIONS, (row["id"], row["version"] - keep_previous))
        return row

    # Not idempotent (a second run adds a version): retried only if it failed before COMMIT.
    return db.in_tenant(user_id, work, idempotent=False)


_LOAD = """
    SELECT s.id, s.name, s.repo, s.version AS head, v.version, v.nonce, v.ciphertext,
           s.embedding_model, vector_dims(s.embedding) AS embedding_dims,
           ARRAY(SELECT version FROM session_versions WHERE session_id = s.id ORDER BY version DESC)
               AS versions
    FROM sessions s
    JOIN session_versions v ON v.session_id = s.id AND v.version = COALESCE(%(version)s, s.version)
    WHERE s.user_id = %(user_id)s
"""


def get_by_name(db: Database, user_id: str, name: str, version: int | None) -> Row | None:
    sql = _LOAD + " AND s.name = %(name)s"
    return _one(db, user_id, sql, {"user_id": user_id, "name": name, "version": version})


def get_latest_for_repo(db: Database, user_id: str, repo: str) -> Row | None:
    sql = _LOAD + " AND (%(repo)s = '' OR s.repo = %(repo)s) ORDER BY s.updated_at DESC, s.id DESC LIMIT 1"
    return _one(db, user_id, sql, {"user_id": user_id, "repo": repo, "version": None})


# The HNSW scan runs before RLS and the repo filter; iterative scans keep going until `limit`
# rows survive them (pgvector >= 0.8), so a small tenant among many still gets hits.
# ef_search: see BENCHMARKS.md for the recall measurements behind the value.
_SEARCH_SETTINGS = (
    "SELECT set_config('hnsw.iterative_scan', 'strict_order', true),"
    " set_config('hnsw.ef_search', '100', true)"
)


def _nearest_sql(dims: int, query: str) -> str:
    # dims is one of SUPPORTED_DIMS, so formatting it into the SQL is safe
    typed = f"embedding::vector({dims})"
    return f"""
        SELECT s.id, s.name, s.repo, s.version, v.saved_at, v.nonce, v.ciphertext,
               s.{typed} <=> {query} AS distance
        FROM sessions s
        JOIN session_versions v ON v.session_id = s.id AND v.version = s.version
        WHERE s.user_id = %(user_id)s AND vector_dims(s.embedding) = {dims}
          AND s.embedding_model = %(model)s
          AND (%(repo)s = '' OR s.repo = %(repo)s)
          AND s.id IS DISTINCT FROM %(exclude)s
        ORDER BY s.{typed} <=> {query}
        LIMIT %(limit)s
        """


def nearest(
    db: Database, user_id: str, vector: list[float], model: str, *, repo: str = "", limit: int = 5
) -> list[Row]:
    """Cosine nearest heads of the same embedding model, with their head ciphertext."""
    if len(vector) not in SUPPORTED_DIMS:
        return []
    params = {"q": Vector(vector), "user_id": user_id, "model": model, "repo": repo, "exclude": None}
    return _search(db, user_id, _nearest_sql(len(vector), "%(q)s"), {**params, "limit": limit})


def related(db: Database, user_id: str, session_id: str, model: str, dims: int, limit: int) -> list[Row]:
    """The sessions nearest to `session_id`'s own vector (itself excluded), in one statement."""
    if dims not in SUPPORTED_DIMS:
        return []
    me = f"(SELECT embedding::vector({dims}) FROM sessions WHERE id = %(exclude)s)"
    params = {"user_id": user_id, "model": model, "repo": "", "exclude": session_id, "limit": limit}
    return _search(db, user_id, _nearest_sql(dims, me), params)


def _search(db: Database, user_id: str, sql: str, params: dict[str, Any]) -> list[Row]:
    def work(conn: Connection) -> Cursor:
        conn.execute(_SEARCH_SETTINGS)
        return conn.execute(sql, params)

    return db.in_tenant(user_id, work, idempotent=True).fetchall()


_PAGE = """
SELECT id, name, repo, preview, version, client, updated_at FROM sessions
WHERE user_id = %(user_id)s AND (%(repo)s = '' OR repo = %(repo)s)
  AND (%(before_at)s::timestamptz IS NULL OR (updated_at, id) < (%(before_at)s, %(before_id)s::uuid))
ORDER BY updated_at DESC, id DESC LIMIT %(limit)s
"""


def page(db: Database, user_id: str, repo: str, limit: int, after: tuple[datetime, str] | None) -> list[Row]:
    """Newest first, keyset-paginated on (updated_at, id): a save between pages cannot make a
    page repeat rows. A session saved again meanwhile moves to the front, so this pass skips
    it and the next listing from the top shows it first."""
    before_at, before_id = after or (None, None)
    params = {
        "user_id": user_id,
        "repo": repo,
        "limit": limit,
        "before_at": before_at,
        "before_id": before_id,
    }
    return db.in_tenant(user_id, lambda conn: conn.execute(_PAGE, params), idempotent=True).fetchall()


def delete(db: Database, user_id: str, name: str) -> int | None:
    """Delete a session and its history; the number of versions removed, or None if absent."""
    row = _one(
        db,
        user_id,
        """
        WITH gone AS (DELETE FROM sessions WHERE user_id = %(user_id)s AND name = %(name)s RETURNING id)
        SELECT count(v.version) AS versions, count(DISTINCT gone.id) AS found
        FROM gone LEFT JOIN session_versions v ON v.session_id = gone.id
        """,
        {"user_id": user_id, "name": name},
    )
    return row["versions"] if row and row["found"] else None


def _vec(embedding: list[float] | None) -> Vector | None:
    return None if embedding is None else Vector(embedding)


def iso(ts: datetime) -> str:
    return ts.isoformat(timespec="seconds")


def _one(db: Database, user_id: str, sql: str, params: dict[str, Any]) -> Row | None:
    """One statement's first row. Reads, and delete: a repeated delete removes nothing more."""
    return db.in_tenant(user_id, lambda conn: conn.execute(sql, params), idempotent=True).fetchone()
