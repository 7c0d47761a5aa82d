"""Search over the tenant's sessions: by meaning (cosine distance on the per-dimension HNSW
indexes) and by keyword (the keyed term tokens of migration 0022, scored BM25-style), both in
one pipelined transaction (one flight) per search; the service fuses them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pgvector import Vector

from sessionvault.db.pool import Connection, Cursor, Database, Tenant

Row = dict[str, Any]
SUPPORTED_DIMS = (384, 1536)  # one partial HNSW index each (migration 0001)


# The HNSW scan runs before RLS and the repo filter; iterative scans keep going until `limit`
# rows survive them (pgvector >= 0.8), so a small tenant among many still gets hits.
# relaxed_order, re-sorted by distance after the scan (the materialized CTE below): at 1,000,000
# sessions the 50,000-session tenant's recall@10 was 0.964 against 0.920 with strict_order, at
# a far lower p95 (BENCHMARKS.md, "A million sessions", where the recall behind ef_search is).
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
          AND s.id IS DISTINCT FROM %(exclude)s
        ORDER BY s.{typed} <=> {query}
        LIMIT %(limit)s
        )
        SELECT * FROM hits ORDER BY distance
        """


def nearest(
    db: Database, at: Tenant, vector: list[float], model: str, *, repo: str = "", limit: int = 5
) -> list[Row]:
    """Cosine nearest heads of the same embedding model, with their head ciphertext."""
    user_id = at.space
    if len(vector) not in SUPPORTED_DIMS:
        return []
    params = {"q": Vector(vector), "user_id": user_id, "model": model, "repo": repo, "exclude": None}
    return _search(db, at, _nearest_sql(len(vector), "%(q)s"), {**params, "limit": limit})


def related(db: Database, at: Tenant, session_id: str, model: str, dims: int, limit: int) -> list[Row]:
    """The sessions nearest to `session_id`'s own vector (itself excluded), in one statement."""
    user_id = at.space
    if dims not in SUPPORTED_DIMS:
        return []
    me = f"(SELECT embedding::vector({dims}) FROM sessions WHERE id = %(exclude)s)"
    params = {"user_id": user_id, "model": model, "repo": "", "exclude": session_id, "limit": limit}
    return _search(db, at, _nearest_sql(dims, me), params)


# BM25 without length normalisation (b = 0: sessions are alike in kind, and the length would be
# one more column to keep): per matched term, idf * tf * (k1 + 1) / (tf + k1), k1 = 1.2. The
# space's size is its usage row's session count (no scan), never below a term's frequency. A
# hit's cosine distance to the query comes along when it has a vector of the query's model, so
# every hit can say how close in meaning it is.
def _matching_sql(dims: int | None) -> str:
    distance = (
        f"CASE WHEN s.embedding_model = %(model)s AND vector_dims(s.embedding) = {dims}"
        f" THEN s.embedding::vector({dims}) <=> %(q)s END"
        if dims in SUPPORTED_DIMS
        else "NULL::float8"
    )
    return f"""
        WITH q AS (SELECT DISTINCT unnest(%(tokens)s::bytea[]) AS token),
        df AS (
            SELECT t.token, count(*) AS n FROM session_terms t JOIN q USING (token)
            WHERE t.user_id = %(user_id)s GROUP BY t.token
        ),
        total AS (
            SELECT coalesce((SELECT sessions FROM user_usage WHERE user_id = %(user_id)s), 1) AS n
        ),
        scored AS (
            SELECT t.session_id,
                   sum(ln(1 + (greatest(total.n, df.n) - df.n + 0.5) / (df.n + 0.5))
                       * t.tf * 2.2 / (t.tf + 1.2)) AS keyword_score
            FROM session_terms t JOIN df USING (token) CROSS JOIN total
            WHERE t.user_id = %(user_id)s
            GROUP BY t.session_id
        ),
        -- What a session holding every query term once would score (a term the space lacks
        -- counts at its highest idf): a hit's share of it says how much of the query it names.
        whole AS (
            SELECT sum(ln(1 + (greatest(total.n, coalesce(df.n, 0)) - coalesce(df.n, 0) + 0.5)
                          / (coalesce(df.n, 0) + 0.5))) AS score
            FROM q LEFT JOIN df USING (token) CROSS JOIN total
        )
        SELECT s.id, s.name, s.repo, s.version, v.saved_at, v.seal_id, v.nonce, v.ciphertext,
               sc.keyword_score, least(1, sc.keyword_score / whole.score) AS keyword_cover,
               {distance} AS distance
        FROM scored sc CROSS JOIN whole
        JOIN sessions s ON s.id = sc.session_id
        JOIN session_versions v ON v.session_id = s.id AND v.version = s.version
        WHERE (%(repo)s = '' OR s.repo = %(repo)s)
        ORDER BY sc.keyword_score DESC, s.updated_at DESC
        LIMIT %(limit)s
        """


@dataclass(frozen=True)
class Query:
    """What a search looks for: the query's vector (None when no provider answered) and model,
    its keyed term tokens, an optional repo, and how many hits of each kind to bring."""

    vector: list[float] | None
    model: str
    tokens: list[bytes]
    repo: str = ""
    limit: int = 5


def find(db: Database, at: Tenant, query: Query) -> tuple[list[Row], list[Row]]:
    """The nearest heads by meaning and the best by keyword, each with its head ciphertext, in
    one transaction (one flight)."""
    dims = len(query.vector) if query.vector is not None else None
    params = {
        "q": Vector(query.vector) if query.vector is not None else None,
        "user_id": at.space,
        "model": query.model,
        "repo": query.repo,
        "exclude": None,
        "limit": query.limit,
        "tokens": query.tokens,
    }

    def work(conn: Connection) -> tuple[Cursor | None, Cursor | None]:
        near = None
        if dims in SUPPORTED_DIMS:
            conn.execute(_SEARCH_SETTINGS)
            near = conn.execute(_nearest_sql(dims or 0, "%(q)s"), params)
        matching = conn.execute(_matching_sql(dims), params) if query.tokens else None
        return near, matching

    near, matching = db.in_tenant(at, work, idempotent=True)
    return (near.fetchall() if near else [], matching.fetchall() if matching else [])


def _search(db: Database, at: Tenant, sql: str, params: dict[str, Any]) -> list[Row]:
    def work(conn: Connection) -> Cursor:
        conn.execute(_SEARCH_SETTINGS)
        return conn.execute(sql, params)

    return db.in_tenant(at, work, idempotent=True).fetchall()
