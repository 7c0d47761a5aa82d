"""Search over the tenant's sessions, in one pipelined transaction (one flight): the keyword
statement (the keyed term tokens of migration 0022, scored BM25-style) and what the vector
search needs from the database (the space's sealed segments this process has not opened, and
the delta: db/vectors.py); the service scores the vectors in memory and fetches the heads its
best matches are (`heads`, a second flight).

`nearest` is the search by meaning as it was before the vectors were sealed (cosine distance on
the per-dimension HNSW indexes over the plaintext `embedding` column): kept as the baseline the
benchmarks measure against, on databases they seed in the clear; the product no longer calls
it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pgvector import Vector

from sessionvault.db import vectors
from sessionvault.db.pool import Connection, Cursor, Database, Tenant

Row = dict[str, Any]
SUPPORTED_DIMS = (384, 1536)  # one partial HNSW index each (migration 0001): the baseline's

_SEARCH_SETTINGS = (
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
    " set_config('hnsw.ef_search', '100', true)"
)


def _nearest_sql(dims: int, query: str) -> str:
    # dims is one of SUPPORTED_DIMS, so formatting it into the SQL is safe
    typed = f"embedding::vector({dims})"
    return f"""
        WITH hits AS MATERIALIZED (
        SELECT s.id, s.name, s.repo, s.version, v.saved_at, v.seal_id, v.nonce, v.ciphertext,
               s.{typed} <=> {query} AS distance
        FROM sessions s
        JOIN session_versions v ON v.session_id = s.id AND v.version = s.version
        WHERE s.user_id = %(user_id)s AND vector_dims(s.embedding) = {dims}
          AND s.embedding_model = %(model)s
          AND (%(repo)s = '' OR s.repo = %(repo)s)
        ORDER BY s.{typed} <=> {query}
        LIMIT %(limit)s
        )
        SELECT * FROM hits ORDER BY distance
        """


def nearest(
    db: Database, at: Tenant, vector: list[float], model: str, *, repo: str = "", limit: int = 5
) -> list[Row]:
    """The baseline: cosine nearest heads by the plaintext HNSW index, with their ciphertext."""
    if len(vector) not in SUPPORTED_DIMS:
        return []
    params = {"q": Vector(vector), "user_id": at.space, "model": model, "repo": repo, "limit": limit}

    def work(conn: Connection) -> Cursor:
        conn.execute(_SEARCH_SETTINGS)
        return conn.execute(_nearest_sql(len(vector), "%(q)s"), params)

    return db.in_tenant(at, work, idempotent=True).fetchall()


# BM25 without length normalisation (b = 0: sessions are alike in kind, and the length would be
# one more column to keep): per matched term, idf * tf * (k1 + 1) / (tf + k1), k1 = 1.2. The
# space's size is its usage row's session count (no scan), never below a term's frequency.
# Each term's idf is computed once (in float8), the sessions are ranked and cut to
# the limit before their head versions are joined, and every CTE is materialized: a CTE the
# planner inlines is evaluated again for each scored session (measured: 13 ms at 300 sessions,
# 272 of them matching a word; 2.5 ms this way).
_MATCHING = """
    WITH q AS (SELECT DISTINCT unnest(%(tokens)s::bytea[]) AS token),
    total AS MATERIALIZED (
        SELECT coalesce((SELECT sessions FROM user_usage WHERE user_id = %(user_id)s), 1)::float8 AS n
    ),
    df AS MATERIALIZED (
        SELECT q.token, count(t.token)::float8 AS n
        FROM q LEFT JOIN session_terms t ON t.token = q.token AND t.user_id = %(user_id)s
        GROUP BY q.token
    ),
    idf AS MATERIALIZED (
        SELECT df.token, df.n, ln(1 + (greatest(total.n, df.n) - df.n + 0.5) / (df.n + 0.5)) AS w
        FROM df CROSS JOIN total
    ),
    -- What a session holding every query term once would score (a term the space lacks
    -- counts at its highest idf): a hit's share of it says how much of the query it names.
    whole AS MATERIALIZED (SELECT sum(w::numeric) AS score FROM idf),
    -- Each addend in numeric: a float8 sum depends on the order rows arrive in, and sessions
    -- that match alike must tie exactly (the newest first, as the ORDER BY says).
    scored AS MATERIALIZED (
        SELECT t.session_id, sum((idf.w * t.tf * 2.2 / (t.tf + 1.2))::numeric) AS keyword_score
        FROM session_terms t JOIN idf USING (token)
        WHERE t.user_id = %(user_id)s AND idf.n > 0
        GROUP BY t.session_id
    ),
    best AS MATERIALIZED (
        SELECT sc.session_id, sc.keyword_score, s.name, s.repo, s.version, s.updated_at
        FROM scored sc JOIN sessions s ON s.id = sc.session_id
        WHERE (%(repo)s = '' OR s.repo = %(repo)s)
        ORDER BY sc.keyword_score DESC, s.updated_at DESC
        LIMIT %(limit)s
    )
    SELECT b.session_id::text AS id, b.name, b.repo, b.version, v.saved_at, v.seal_id, v.nonce,
           v.ciphertext, b.keyword_score, least(1, b.keyword_score / whole.score) AS keyword_cover
    FROM best b CROSS JOIN whole
    JOIN session_versions v ON v.session_id = b.session_id AND v.version = b.version
    ORDER BY b.keyword_score DESC, b.updated_at DESC
    """


@dataclass(frozen=True)
class Query:
    """What a search asks the database: its keyed term tokens (none: no keyword statement),
    the embedding model whose vectors it scores ("" : none), the segments this process holds
    opened for the space and the through_seq it last saw them at, an optional repo, and how many
    keyword hits to bring."""

    tokens: list[bytes]
    model: str = ""
    cached: list[str] = field(default_factory=list)
    repo: str = ""
    limit: int = 10
    since: int | None = None  # the segments' through_seq this process last read (db/vectors.py)


@dataclass(frozen=True)
class Found:
    """What one search flight brought: the keyword hits (with their head ciphertext), the
    space's segments of the model (id, through_seq), those to open (id, nonce, ciphertext),
    and the delta (db/vectors.py)."""

    by_keyword: list[Row]
    segments: list[Row]
    opening: list[Row]
    delta: list[Row]


def find(db: Database, at: Tenant, query: Query) -> Found:
    """The keyword hits and the vector search's reading, in one transaction (one flight)."""
    params = {
        "user_id": at.space,
        "model": query.model,
        "cached": query.cached,
        "repo": query.repo,
        "limit": query.limit,
        "tokens": query.tokens,
        "since": query.since,
    }

    def work(conn: Connection) -> tuple[Cursor | None, tuple[Cursor, Cursor] | None]:
        matching = conn.execute(_MATCHING, params) if query.tokens else None
        reading = vectors.reading(conn, params) if query.model else None
        return matching, reading

    matching, reading = db.in_tenant(at, work, idempotent=True)
    segments, delta = (c.fetchall() for c in reading) if reading else ([], [])
    opening = [s for s in segments if s["ciphertext"] is not None]
    return Found(matching.fetchall() if matching else [], segments, opening, delta)


def heads(db: Database, at: Tenant, ids: list[str]) -> list[Row]:
    """The heads of `ids` that still exist, with their head version's ciphertext (one flight)."""
    return db.in_tenant(at, lambda conn: vectors.heads(conn, at.space, ids), idempotent=True).fetchall()
