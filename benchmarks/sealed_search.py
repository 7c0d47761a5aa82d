"""Sealed embeddings: what an exact search over a tenant's sealed vectors costs, decrypted in
the application, against today's search on the HNSW index (issue 27 item 10).

    .venv/bin/python -m benchmarks.sealed_search [--sizes 1000,10000,100000] [--queries 15]

Embeddings can be inverted into text by published attacks, so a plaintext `embedding` column is
close to plaintext content. The alternative measured here: each session's vector stored sealed
(AES-256-GCM under the tenant's data key, like a record) and a search that reads all of the
tenant's sealed vectors, opens them in the application and scores them exactly (numpy). Three
tenants of 1,000 / 10,000 / 100,000 sessions share one embedded PostgreSQL (so the HNSW index
holds all 111,000 rows, as it holds every tenant's in production); 384-d clustered random unit
vectors (benchmarks/seed.py's shape, no model); sealed vectors in a table of this benchmark's
own (RLS on, read as the serving role through `Database.in_tenant`, one flight), as float32
(1,564 bytes stored each) and float16 (796 bytes).

Per tenant size it prints the p50 / p95 of:
- HNSW: `db.search.nearest` as search_sessions runs it (iterative scan, ef_search 100), top 5;
- exact, cold: fetch every sealed vector, open each, score, top 5 (what every search costs when
  nothing is cached: a Lambda's first search, or any search after a save);
- exact, warm: the tenant's vectors already open in memory (a per-process cache), score only;
and the cold path's parts (fetch, open, score), the memory a warm cache holds, and recall@5 of
HNSW against the exact answer, and the index the planner takes for the tenant's search. Scoring
uses one BLAS thread. Nothing is downloaded."""

from __future__ import annotations

import argparse
import base64
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from .common import header, ms, p50, p95, section

MODEL = "local:all-MiniLM-L6-v2"
DIMS = 384
TOP = 5

_TABLE = """
CREATE TABLE bench_sealed_vectors (
    session_id uuid PRIMARY KEY,
    user_id    uuid NOT NULL,
    f32        bytea NOT NULL,
    f16        bytea NOT NULL
);
CREATE INDEX bench_sealed_vectors_user ON bench_sealed_vectors (user_id);
ALTER TABLE bench_sealed_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE bench_sealed_vectors FORCE ROW LEVEL SECURITY;
CREATE POLICY bench_tenant ON bench_sealed_vectors USING (user_id = app_current_user_id());
GRANT SELECT ON bench_sealed_vectors TO sessionvault_app;
"""


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _vectors(rng: np.random.Generator, n: int, topics: np.ndarray) -> np.ndarray:
    chosen = topics[rng.integers(0, len(topics), size=n)]
    return _unit(chosen + 0.9 * _unit(rng.standard_normal((n, DIMS)))).astype(np.float32)


def _aad(user_id: str, session_id: str) -> bytes:
    return f"sessionvault/embedding/v1\x1f{user_id}\x1f{session_id}".encode()


def _seed(db: Any, deks: dict[str, bytes], sizes: dict[str, int], rng: np.random.Generator) -> np.ndarray:
    """Sessions (with their plaintext vectors, as today), one version each, and the same
    vectors sealed; the HNSW indexes rebuilt after the load. Returns the topic centres."""
    from pgvector.psycopg import register_vector

    from sessionvault.core import crypto

    topics = _unit(rng.standard_normal((2_000, DIMS)))
    now = datetime.now(UTC)
    with psycopg.connect(db.owner_url) as conn:
        register_vector(conn)
        conn.execute(_TABLE)
        conn.execute("SET maintenance_work_mem = '1GB'")
        hnsw = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
            " AND tablename = 'sessions' AND indexdef ILIKE '%USING hnsw%'"
        ).fetchall()
        for name, _ in hnsw:
            conn.execute(f'DROP INDEX "{name}"')
        started = time.perf_counter()
        for user_id, n in sizes.items():
            vectors = _vectors(rng, n, topics)
            ids = [uuid.uuid4() for _ in range(n)]
            owner = uuid.UUID(user_id)
            with conn.cursor().copy(
                "COPY sessions (id, user_id, name, repo, preview, client, version, embedding,"
                " embedding_model, created_at, updated_at) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(
                    [
                        *("uuid", "uuid", "text", "text", "text", "text", "int4", "vector", "text"),
                        *("timestamptz",) * 2,
                    ]
                )
                for i, sid in enumerate(ids):
                    copy.write_row(
                        (sid, owner, f"s-{i}", "github.com/a/b", "", "bench", 1, vectors[i], MODEL, now, now)
                    )
            with conn.cursor().copy(
                "COPY session_versions (session_id, user_id, version, nonce, ciphertext, client, saved_at)"
                " FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "uuid", "int4", "bytea", "bytea", "text", "timestamptz"])
                for sid in ids:  # a record's size; its content is never opened here
                    copy.write_row((sid, owner, 1, os.urandom(12), os.urandom(1_200), "bench", now))
            dek = deks[user_id]
            with conn.cursor().copy(
                "COPY bench_sealed_vectors (session_id, user_id, f32, f16) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "uuid", "bytea", "bytea"])
                for i, sid in enumerate(ids):
                    aad = _aad(user_id, str(sid))
                    f32 = b"".join(crypto.seal(dek, vectors[i].tobytes(), aad))
                    f16 = b"".join(crypto.seal(dek, vectors[i].astype(np.float16).tobytes(), aad))
                    copy.write_row((sid, owner, f32, f16))
        print(
            f"   seed: {sum(sizes.values()):,} sessions, vectors sealed,"
            f" COPY in {time.perf_counter() - started:.0f} s"
        )
        started = time.perf_counter()
        for _, definition in hnsw:
            conn.execute(definition)
        conn.commit()
        print(
            f"   seed: HNSW index rebuilt over every tenant's rows in {time.perf_counter() - started:.0f} s"
        )
    with psycopg.connect(db.owner_url, autocommit=True) as conn:
        for table in ("sessions", "session_versions", "bench_sealed_vectors"):
            conn.execute(f"VACUUM ANALYZE {table}")
        conn.execute("CHECKPOINT")
    return topics


class Exact:
    """An exact search over one tenant's sealed vectors, opened in this process."""

    def __init__(self, app: Any, user_id: str, dek: bytes, column: str) -> None:
        self.app, self.user_id, self.dek, self.column = app, user_id, dek, column
        self.dtype = np.float32 if column == "f32" else np.float16
        self.parts: dict[str, list[float]] = {"fetch": [], "open": [], "score": []}

    def fetch(self) -> list[dict[str, Any]]:
        from sessionvault.db.pool import Tenant

        sql = f"SELECT session_id, {self.column} FROM bench_sealed_vectors WHERE user_id = %s"

        def work(conn: Any) -> Any:
            return conn.cursor(binary=True).execute(sql, (self.user_id,))

        return self.app.in_tenant(Tenant(self.user_id), work, idempotent=True).fetchall()

    def open(self, rows: list[dict[str, Any]]) -> tuple[list[Any], np.ndarray]:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        gcm, user = AESGCM(self.dek), self.user_id
        pairs = [(r["session_id"], r[self.column]) for r in rows]  # the pool's rows are dicts
        ids = [sid for sid, _ in pairs]
        plain = b"".join(gcm.decrypt(blob[:12], blob[12:], _aad(user, str(sid))) for sid, blob in pairs)
        return ids, np.frombuffer(plain, dtype=self.dtype).reshape(len(rows), DIMS).astype(np.float32)

    @staticmethod
    def score(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
        scores = matrix @ query
        top = np.argpartition(-scores, TOP)[:TOP]
        return top[np.argsort(-scores[top])]

    def cold(self, query: np.ndarray) -> list[Any]:
        t0 = time.perf_counter()
        rows = self.fetch()
        t1 = time.perf_counter()
        ids, matrix = self.open(rows)
        t2 = time.perf_counter()
        top = self.score(matrix, query)
        t3 = time.perf_counter()
        for part, took in zip(("fetch", "open", "score"), (t1 - t0, t2 - t1, t3 - t2), strict=True):
            self.parts[part].append(took)
        return [ids[i] for i in top]


def _time(fn: Callable[[np.ndarray], Any], queries: list[np.ndarray]) -> tuple[list[float], list[Any]]:
    fn(queries[0])  # warm-up: plans, pool, caches
    samples, answers = [], []
    for q in queries:
        started = time.perf_counter()
        answers.append(fn(q))
        samples.append(time.perf_counter() - started)
    return samples, answers


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=15)
    args = parser.parse_args()
    counts = [int(s) for s in args.sizes.split(",")]
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")  # one core for scoring: the other serves requests
    header()
    section(
        "Sealed embeddings: exact search in the application against the HNSW index",
        f".venv/bin/python -m benchmarks.sealed_search --sizes {args.sizes} --queries {args.queries}",
        f"{args.queries} queries per tenant (near a random stored vector); embedded PostgreSQL over a",
        "local socket: a remote database adds its RTT to every column and its bandwidth to 'fetch'.",
    )
    from sessionvault.core.keys import WrappedKey
    from sessionvault.db import search
    from sessionvault.db.pool import Database
    from sessionvault.local.host import embedded
    from sessionvault.runtime import key_provider
    from sessionvault.service import accounts

    from .common import make_settings

    home = Path(tempfile.mkdtemp(prefix="sessionvault-bench-sealed-search-"))
    try:
        db = embedded.start(home)
        settings = make_settings(
            db.app_url, base64.b64encode(os.urandom(32)).decode(), "bench-search-salt-012345"
        )
        provider = key_provider(settings)
        admin = Database(db.admin_url, max_size=1)
        try:
            users = {accounts.create_user(admin, provider, f"bench-{n}"): n for n in counts}
            with admin.identity() as conn:
                deks = {
                    u: provider.unwrap(
                        u,
                        WrappedKey.from_row(
                            conn.execute(
                                "SELECT dek_wrapped, key_id FROM users WHERE id = %s", (u,)
                            ).fetchone()
                        ),
                    )
                    for u in users
                }
        finally:
            admin.close()
        rng = np.random.default_rng(11)
        _seed(db, deks, users, rng)
        app = Database(db.app_url, max_size=2)
        try:
            rows = []
            for user_id, n in users.items():
                rows.append(_measure(app, search, user_id, n, deks[user_id], rng, args.queries))
        finally:
            app.close()
    finally:
        try:
            embedded.stop(home)
        finally:
            shutil.rmtree(home, ignore_errors=True)
    _report(rows)


def _measure(
    app: Any, search: Any, user_id: str, n: int, dek: bytes, rng: np.random.Generator, q: int
) -> dict:
    exact32, exact16 = Exact(app, user_id, dek, "f32"), Exact(app, user_id, dek, "f16")
    ids, matrix = exact32.open(exact32.fetch())
    picks = rng.integers(0, n, size=q)
    queries = [_unit(matrix[i] + 0.5 * _unit(rng.standard_normal(DIMS))).astype(np.float32) for i in picks]

    def hnsw(query: np.ndarray) -> list[Any]:
        from sessionvault.db.pool import Tenant

        return [h["id"] for h in search.nearest(app, Tenant(user_id), query.tolist(), MODEL, limit=TOP)]

    def warm(query: np.ndarray) -> list[Any]:
        return [ids[i] for i in Exact.score(matrix, query)]

    plan = _plan(app, search, user_id, queries[0])
    hnsw_t, hnsw_ids = _time(hnsw, queries)
    cold_t, cold_ids = _time(exact32.cold, queries)
    cold16_t, _ = _time(exact16.cold, queries)
    warm_t, _ = _time(warm, queries)
    recall = np.mean([len(set(h) & set(e)) / TOP for h, e in zip(hnsw_ids, cold_ids, strict=True)])
    parts = {k: p50(v) for k, v in exact32.parts.items()}
    return {
        "n": n,
        "hnsw": hnsw_t,
        "cold": cold_t,
        "cold16": cold16_t,
        "warm": warm_t,
        "parts": parts,
        "recall": float(recall),
        "plan": plan,
        "mib": matrix.nbytes / 2**20,
    }


def _plan(app: Any, search: Any, user_id: str, query: np.ndarray) -> str:
    """Which index the planner takes for this tenant's search_sessions statement."""
    from pgvector import Vector

    from sessionvault.db.pool import Tenant

    sql = "EXPLAIN " + search._nearest_sql(DIMS, "%(q)s")
    params = {"q": Vector(query.tolist()), "user_id": user_id, "model": MODEL, "repo": "", "exclude": None}

    def work(conn: Any) -> Any:
        conn.execute(search._SEARCH_SETTINGS)
        return conn.execute(sql, {**params, "limit": TOP})

    text = "\n".join(
        str(next(iter(r.values()))) for r in app.in_tenant(Tenant(user_id), work, idempotent=True)
    )
    for pattern in (r"Index Scan using (\w+) on sessions", r"Bitmap Index Scan on (\w+)"):
        if found := re.search(pattern, text):
            return found.group(1)
    return "seq scan" if "Seq Scan on sessions" in text else text.splitlines()[0][:40]


def _report(rows: list[dict]) -> None:
    print(
        "   sessions   HNSW p50/p95 ms   exact cold f32 p50/p95   exact cold f16 p50/p95   exact warm p50/p95"
    )
    for r in rows:
        cells = [f"{ms(p50(r[k]))}/{ms(p95(r[k])).strip():>7}" for k in ("hnsw", "cold", "cold16", "warm")]
        print(f"   {r['n']:>8,}   {cells[0]:>16}   {cells[1]:>22}   {cells[2]:>22}   {cells[3]:>18}")
    print(
        "   the cold f32 path's parts (p50 ms): fetch / open / score; warm cache size; HNSW recall@5 vs exact"
    )
    for r in rows:
        parts = " / ".join(f"{r['parts'][k] * 1000:.1f}" for k in ("fetch", "open", "score"))
        print(
            f"   {r['n']:>8,}   {parts:<24} {r['mib']:7.1f} MiB   recall@5 {r['recall']:.2f}"
            f"   search_sessions' plan: {r['plan']}"
        )


if __name__ == "__main__":
    main()
