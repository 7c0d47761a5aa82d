"""Search by meaning over sealed vectors (issue 36, migration 0023) against the HNSW search it
replaced, at spaces of 1,000 / 10,000 / 100,000 sessions sharing one embedded PostgreSQL (the
HNSW index holds every tenant's rows, as in production).

    .venv/bin/python -m benchmarks.run --only vectors          (BENCH_VECTOR_SIZES=1000,10000)

Seeded through COPY into the product's own tables: each session with its vector both in the
plaintext `embedding` column (for the baseline, `db.search.nearest`, which no longer serves) and
sealed in `sealed_vector` as a save writes it; 384-d clustered random unit vectors (no model), one
version of a record's size each. Each space is then compacted (`vector_index.compact`, timed).
Per space, the p50 / p95 of:
- HNSW: the baseline, iterative scan, ef_search 100, top 10;
- sealed, warm: what search_sessions does for the meaning part on a warm process: its flight (the
  segment list, no segment to open, an empty delta), scoring in memory, the heads' flight;
- sealed, cold: the same with an empty segment cache (a new process or Lambda container: every
  segment fetched and opened);
and recall@10 of each against exact float32 cosine. Run as the admin role (it names its tenant
by id; the same row security); one BLAS thread."""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from .common import ms, p50, p95, section

# BENCH_VECTOR_DIMS=1536 measures OpenAI's text-embedding-3-small's size (what a Lambda serves).
DIMS = int(os.environ.get("BENCH_VECTOR_DIMS", "384"))
MODEL = "local:all-MiniLM-L6-v2" if DIMS == 384 else "openai:text-embedding-3-small"
TOP = 10
QUERIES = 25


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def users_with_keys(admin_url: str, names: list[str]) -> tuple[Any, dict[str, bytes]]:
    """An admin pool, and a user per name (in order) with its data key unwrapped."""
    from sessionvault.core.keys import WrappedKey
    from sessionvault.db.pool import Database
    from sessionvault.runtime import key_provider
    from sessionvault.service import accounts

    from .common import make_settings

    provider = key_provider(
        make_settings(admin_url, base64.b64encode(os.urandom(32)).decode(), "bench-vectors-salt-0123")
    )
    admin = Database(admin_url, max_size=2)
    deks = {}
    for name in names:
        user = accounts.create_user(admin, provider, name)
        with admin.identity() as conn:
            row = conn.execute("SELECT dek_wrapped, key_id FROM users WHERE id = %s", (user,)).fetchone()
        deks[user] = provider.unwrap(user, WrappedKey.from_row(row))
    return admin, deks


def near(vectors: np.ndarray, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """`n` queries, each near a stored vector (as a paraphrase is near its session)."""
    return [
        _unit(vectors[rng.integers(0, len(vectors))] + 0.3 * _unit(rng.standard_normal(DIMS)))
        for _ in range(n)
    ]


def _seed(
    owner_url: str,
    deks: dict[str, bytes],
    sizes: dict[str, int],
    rng: np.random.Generator,
    *,
    dims: int = DIMS,
    model: str = MODEL,
) -> dict[str, Any]:
    from pgvector.psycopg import register_vector

    from sessionvault.service import vector_index

    topics = _unit(rng.standard_normal((2_000, dims)))
    now, stored = datetime.now(UTC), {}
    seq = 0
    with psycopg.connect(owner_url) as conn:
        register_vector(conn)
        hnsw = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes"
            " WHERE tablename = 'sessions' AND indexdef ILIKE '%hnsw%'"
        ).fetchall()
        for name, _ in hnsw:
            conn.execute(f'DROP INDEX "{name}"')
        for user_id, n in sizes.items():
            chosen = topics[rng.integers(0, len(topics), size=n)]
            vectors = _unit(chosen + 0.9 * _unit(rng.standard_normal((n, dims)))).astype(np.float32)
            ids = [uuid.uuid4() for _ in range(n)]
            stored[user_id] = (ids, vectors)
            with conn.cursor().copy(
                "COPY sessions (id, user_id, name, repo, preview, client, version, embedding, sealed_vector,"
                " vector_seq, embedding_model, created_at, updated_at) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                types = (
                    "uuid",
                    "uuid",
                    "text",
                    "text",
                    "text",
                    "text",
                    "int4",
                    "vector",
                    "bytea",
                    "int8",
                    "text",
                )
                copy.set_types([*types, "timestamptz", "timestamptz"])
                for i, sid in enumerate(ids):
                    seq += 1
                    sealed = vector_index.seal_vector(deks[user_id], user_id, f"{sid}:1", model, vectors[i])
                    row = (sid, uuid.UUID(user_id), f"s-{i}", "github.com/a/b", "", "bench", 1)
                    copy.write_row((*row, vectors[i], sealed, seq, model, now, now))
            with conn.cursor().copy(
                "COPY session_versions (session_id, user_id, version, nonce, ciphertext, client, saved_at)"
                " FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "uuid", "int4", "bytea", "bytea", "text", "timestamptz"])
                for sid in ids:  # a record's size; never opened here
                    copy.write_row(
                        (sid, uuid.UUID(user_id), 1, os.urandom(12), os.urandom(1_200), "bench", now)
                    )
        conn.execute(f"SELECT setval('session_vector_seq', {seq})")
        conn.execute("SET maintenance_work_mem = '1GB'")
        for _, definition in hnsw:
            conn.execute(definition)
        conn.commit()
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE sessions")
        conn.execute("VACUUM ANALYZE session_versions")
    return stored


def vectors_figures() -> None:
    from threadpoolctl import threadpool_limits

    from sessionvault.db import search
    from sessionvault.db.pool import Tenant
    from sessionvault.local.host import embedded
    from sessionvault.service import vector_index

    counts = [int(s) for s in os.environ.get("BENCH_VECTOR_SIZES", "1000,10000,100000").split(",")]
    threadpool_limits(limits=1, user_api="blas")
    section(
        "Sealed vectors against the HNSW search they replaced (issue 36)",
        ".venv/bin/python -m benchmarks.run --only vectors",
        f"{DIMS} dimensions ({MODEL}); {QUERIES} queries per space (near a stored vector), top {TOP};",
        "embedded PostgreSQL over a local socket: a remote database adds its round trip to each flight",
        "(sealed: 2, HNSW: 1).",
    )
    home = Path(tempfile.mkdtemp(prefix="sv-bench-vectors-"))
    try:
        db = embedded.start(home)
        admin, deks = users_with_keys(db.admin_url, [f"bench-{n}" for n in counts])
        users = dict(zip(deks, counts, strict=True))
        started = time.perf_counter()
        stored = _seed(db.owner_url, deks, users, np.random.default_rng(7))
        took = time.perf_counter() - started
        print(f"   seed: {sum(users.values()):,} sessions (COPY, sealed, HNSW rebuilt) in {took:.0f} s")
        rng = np.random.default_rng(8)
        print(f"   {'space':>8} {'compact':>8} {'HNSW p50/p95':>15} {'warm p50/p95':>15} {'cold p50/p95':>15}"
              f" {'recall HNSW/sealed':>19} {'cache MB':>8}")  # fmt: skip
        for user_id, n in users.items():
            at, dek = Tenant(user_id), deks[user_id]
            started = time.perf_counter()
            vector_index.compact(admin, at, dek, MODEL)
            compacted = time.perf_counter() - started
            ids, vectors = stored[user_id]
            queries = near(vectors, QUERIES, rng)
            exact = [{str(ids[i]) for i in np.argsort(-(vectors @ q))[:TOP]} for q in queries]
            warm = vector_index.SegmentCache()
            _sealed(admin, at, dek, queries[0], warm)  # the warm cache filled once
            figures: dict[str, list[float]] = {"hnsw": [], "warm": [], "cold": []}
            recall: dict[str, list[float]] = {"hnsw": [], "warm": []}
            for q, truth in zip(queries, exact, strict=True):
                for kind in ("hnsw", "warm", "cold"):
                    t = time.perf_counter()
                    if kind == "hnsw":
                        got = [str(h["id"]) for h in search.nearest(admin, at, q.tolist(), MODEL, limit=TOP)]
                    else:
                        got = _sealed(
                            admin, at, dek, q, warm if kind == "warm" else vector_index.SegmentCache()
                        )
                    figures[kind].append(time.perf_counter() - t)
                    if kind in recall:
                        recall[kind].append(len(set(got) & truth) / TOP)
            cache_mb = warm.held_bytes / 1e6
            print(
                f"   {n:>8,} {ms(compacted):>8} {ms(p50(figures['hnsw'])):>7}/{ms(p95(figures['hnsw'])):<7}"
                f" {ms(p50(figures['warm'])):>7}/{ms(p95(figures['warm'])):<7}"
                f" {ms(p50(figures['cold'])):>7}/{ms(p95(figures['cold'])):<7}"
                f" {np.mean(recall['hnsw']):>9.3f}/{np.mean(recall['warm']):<9.3f} {cache_mb:>8.1f}"
            )
        admin.close()
    finally:
        try:
            embedded.stop(home)
        finally:
            shutil.rmtree(home, ignore_errors=True)


def _sealed(admin: Any, at: Any, dek: bytes, q: np.ndarray, cache: Any) -> list[str]:
    """The meaning part of search_sessions: its flight, the scoring in memory, the heads."""
    from sessionvault.db import search
    from sessionvault.service import vector_index

    since = cache.since(at.space, MODEL)
    flight = search.find(admin, at, search.Query([], MODEL, cache.ids(at.space, MODEL), since=since))
    cache.read(at.space, MODEL, flight)
    scored = vector_index.score(cache, dek, at.space, MODEL, flight, q, depth=TOP)
    return [r["id"] for r in search.heads(admin, at, [i for i, _ in scored.best])]
