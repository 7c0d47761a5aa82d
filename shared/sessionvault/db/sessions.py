"""Data access for the tenant plane. Every function runs inside a tenant transaction
(`Database.tenant`), so RLS scopes it; the explicit user_id filters are there for the indexes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from pgvector import Vector


def upsert_head(
    conn: psycopg.Connection,
    user_id: str,
    *,
    name: str,
    repo: str,
    preview: str,
    client: str,
    embedding: list[float] | None,
    model: str | None,
) -> dict[str, Any]:
    """Create the session or bump its version; the row lock serialises concurrent saves.
    clock_timestamp(), not now(): a save that waited for the lock is the newer one."""
    return conn.execute(
        """
        INSERT INTO sessions (user_id, name, repo, preview, client, version, embedding, embedding_model,
                              created_at, updated_at)
        VALUES (%s, %s, %s, %s, %s, 1, %s, %s, clock_timestamp(), clock_timestamp())
        ON CONFLICT (user_id, name) DO UPDATE SET
            repo = EXCLUDED.repo, preview = EXCLUDED.preview, client = EXCLUDED.client,
            version = sessions.version + 1, embedding = EXCLUDED.embedding,
            embedding_model = EXCLUDED.embedding_model, embed_failures = 0, embed_retry_at = NULL,
            updated_at = clock_timestamp()
        RETURNING id, version, updated_at
        """,
        (user_id, name, repo, preview, client, _vec(embedding), model if embedding else None),
    ).fetchone()


def insert_version(
    conn: psycopg.Connection,
    user_id: str,
    head: dict[str, Any],
    nonce: bytes,
    ciphertext: bytes,
    client: str,
    keep_previous: int,
) -> None:
    conn.execute(
        "INSERT INTO session_versions (session_id, user_id, version, nonce, ciphertext, client, saved_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (head["id"], user_id, head["version"], nonce, ciphertext, client, head["updated_at"]),
    )
    conn.execute(
        "DELETE FROM session_versions WHERE session_id = %s AND version < %s",
        (head["id"], head["version"] - keep_previous),
    )


_LOAD = """
    SELECT s.id, s.name, s.repo, s.version AS head, v.version, v.nonce, v.ciphertext,
           s.embedding_model,
           ARRAY(SELECT version FROM session_versions WHERE session_id = s.id ORDER BY version DESC)
               AS versions
    FROM sessions s
    JOIN session_versions v ON v.session_id = s.id AND v.version = COALESCE(%(version)s, s.version)
    WHERE s.user_id = %(user_id)s
"""


def get_by_name(
    conn: psycopg.Connection, user_id: str, name: str, version: int | None
) -> dict[str, Any] | None:
    sql = _LOAD + " AND s.name = %(name)s"
    return conn.execute(sql, {"user_id": user_id, "name": name, "version": version}).fetchone()


def get_latest_for_repo(conn: psycopg.Connection, user_id: str, repo: str) -> dict[str, Any] | None:
    sql = _LOAD + " AND (%(repo)s = '' OR s.repo = %(repo)s) ORDER BY s.updated_at DESC, s.id DESC LIMIT 1"
    return conn.execute(sql, {"user_id": user_id, "repo": repo, "version": None}).fetchone()


def embedding_of(conn: psycopg.Connection, session_id: str) -> list[float] | None:
    row = conn.execute("SELECT embedding FROM sessions WHERE id = %s", (session_id,)).fetchone()
    return None if row is None or row["embedding"] is None else row["embedding"].to_list()


def nearest(
    conn: psycopg.Connection,
    user_id: str,
    vector: list[float],
    model: str,
    *,
    repo: str = "",
    limit: int = 5,
    exclude_id: str | None = None,
) -> list[dict[str, Any]]:
    """Cosine nearest heads of the same embedding model, with their head ciphertext.

    The HNSW scan runs before RLS and the repo filter; iterative scans keep going until
    `limit` rows survive them (pgvector >= 0.8), so a small tenant among many still gets hits.
    ef_search 100 trades a little speed for recall (BENCHMARKS.md)."""
    dims = len(vector)
    if dims not in (384, 1536):
        return []
    conn.execute(
        "SELECT set_config('hnsw.iterative_scan', 'strict_order', true),"
        " set_config('hnsw.ef_search', '100', true)"
    )
    # dims is one of two integers, so formatting it into the SQL is safe
    typed = f"embedding::vector({dims})"
    return conn.execute(
        f"""
        SELECT s.id, s.name, s.repo, s.version, v.saved_at, v.nonce, v.ciphertext,
               {typed} <=> %(q)s AS distance
        FROM sessions s
        JOIN session_versions v ON v.session_id = s.id AND v.version = s.version
        WHERE s.user_id = %(user_id)s AND vector_dims(s.embedding) = {dims}
          AND s.embedding_model = %(model)s
          AND (%(repo)s = '' OR s.repo = %(repo)s)
          AND s.id IS DISTINCT FROM %(exclude)s
        ORDER BY {typed} <=> %(q)s
        LIMIT %(limit)s
        """,
        {
            "q": Vector(vector),
            "user_id": user_id,
            "model": model,
            "repo": repo,
            "exclude": exclude_id,
            "limit": limit,
        },
    ).fetchall()


def page(
    conn: psycopg.Connection, user_id: str, repo: str, limit: int, after: tuple[datetime, str] | None
) -> list[dict[str, Any]]:
    """Newest first, keyset-paginated on (updated_at, id): a save between pages cannot make a
    page repeat rows. A session saved again meanwhile moves to the front, so this pass skips
    it and the next listing from the top shows it first."""
    before_at, before_id = after or (None, None)
    return conn.execute(
        """
        SELECT id, name, repo, preview, version, client, updated_at FROM sessions
        WHERE user_id = %(user_id)s AND (%(repo)s = '' OR repo = %(repo)s)
          AND (%(before_at)s::timestamptz IS NULL OR (updated_at, id) < (%(before_at)s, %(before_id)s::uuid))
        ORDER BY updated_at DESC, id DESC LIMIT %(limit)s
        """,
        {"user_id": user_id, "repo": repo, "limit": limit, "before_at": before_at, "before_id": before_id},
    ).fetchall()


def delete(conn: psycopg.Connection, user_id: str, name: str) -> int | None:
    """Delete a session and its history; the number of versions removed, or None if absent."""
    row = conn.execute(
        """
        WITH gone AS (DELETE FROM sessions WHERE user_id = %s AND name = %s RETURNING id)
        SELECT count(v.version) AS versions, count(DISTINCT gone.id) AS found
        FROM gone LEFT JOIN session_versions v ON v.session_id = gone.id
        """,
        (user_id, name),
    ).fetchone()
    return row["versions"] if row["found"] else None


def _vec(embedding: list[float] | None) -> Vector | None:
    return None if embedding is None else Vector(embedding)


def iso(ts: datetime) -> str:
    return ts.isoformat(timespec="seconds")
