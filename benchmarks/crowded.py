"""A space among many (issue 36's last target): the sealed search of one 50,000-session space in
a table of 100,000 sessions, then of 1,000,000 (the other 950,000 belong to 1,000 other users),
on one embedded PostgreSQL.

    .venv/bin/python -m benchmarks.run --only crowded

The space is seeded as benchmarks/sealed_vectors.py seeds one (its vectors sealed, compacted
into segments); the other users' sessions are rows with a sealed vector and a head version each
(random bytes: this search never opens another space's rows, it must not even read them). The
figure is search_sessions' meaning part (sealed_vectors._sealed: the flight, the scoring, the
heads), warm (this process holds the space's segments) and cold (a new cache), QUERIES calls of
each after the table grew and was analysed. BENCH_CROWD_SIZE sets the larger table (default
1,000,000)."""

from __future__ import annotations

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
from .sealed_vectors import DIMS, MODEL, _sealed, _seed, near, users_with_keys

SPACE = 50_000
NEIGHBOURS = 1_000
QUERIES = 60
CHUNK = 50_000


def _crowd(owner_url: str, users: list[str], rows: int, start: int) -> None:
    """`rows` more sessions, spread over `users`, each with a sealed-sized vector and a head."""
    now = datetime.now(UTC)
    with psycopg.connect(owner_url) as conn:
        for first in range(0, rows, CHUNK):
            batch = [
                (uuid.uuid4(), users[(start + first + i) % len(users)])
                for i in range(min(CHUNK, rows - first))
            ]
            with conn.cursor().copy(
                "COPY sessions (id, user_id, name, repo, preview, client, version, sealed_vector, vector_seq,"
                " embedding_model, created_at, updated_at) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                types = ["uuid", "uuid", "text", "text", "text", "text", "int4", "bytea", "int8", "text"]
                copy.set_types([*types, "timestamptz", "timestamptz"])
                for i, (sid, user) in enumerate(batch):
                    name = f"n-{start + first + i}"
                    copy.write_row((sid, uuid.UUID(user), name, "github.com/c/d", "", "bench", 1,
                                    os.urandom(DIMS * 2 + 28), 0, MODEL, now, now))  # fmt: skip
            with conn.cursor().copy(
                "COPY session_versions (session_id, user_id, version, nonce, ciphertext, client, saved_at)"
                " FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "uuid", "int4", "bytea", "bytea", "text", "timestamptz"])
                for sid, user in batch:
                    copy.write_row((sid, uuid.UUID(user), 1, os.urandom(12), os.urandom(1_200), "bench", now))
            conn.commit()
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE sessions")
        conn.execute("VACUUM ANALYZE session_versions")


def _measure(admin: Any, at: Any, dek: bytes, queries: list[np.ndarray]) -> dict[str, list[float]]:
    from sessionvault.service import vector_index

    warm = vector_index.SegmentCache()
    _sealed(admin, at, dek, queries[0], warm)
    figures: dict[str, list[float]] = {"warm": [], "cold": []}
    for q in queries:
        for kind in ("warm", "cold"):
            t = time.perf_counter()
            _sealed(admin, at, dek, q, warm if kind == "warm" else vector_index.SegmentCache())
            figures[kind].append(time.perf_counter() - t)
    return figures


def crowded_figures() -> None:
    from threadpoolctl import threadpool_limits

    from sessionvault.db.pool import Tenant
    from sessionvault.local.host import embedded
    from sessionvault.service import vector_index

    large = int(os.environ.get("BENCH_CROWD_SIZE", "1000000"))
    threadpool_limits(limits=1, user_api="blas")
    section(
        "A space among many: one space's sealed search as the table grows (issue 36)",
        ".venv/bin/python -m benchmarks.run --only crowded",
        f"one space of {SPACE:,} sessions ({DIMS} dimensions, compacted), in a table of {2 * SPACE:,}",
        f"sessions then of {large:,} (the rest over {NEIGHBOURS:,} other users); {QUERIES} queries, top 10",
    )
    home = Path(tempfile.mkdtemp(prefix="sv-bench-crowded-"))
    try:
        db = embedded.start(home)
        admin, deks = users_with_keys(
            db.admin_url, ["bench-space"] + [f"bench-other-{i}" for i in range(NEIGHBOURS)]
        )
        space, *others = deks
        dek = deks[space]
        stored = _seed(db.owner_url, {space: dek}, {space: SPACE}, np.random.default_rng(7))
        at = Tenant(space)
        vector_index.compact(admin, at, dek, MODEL)
        _, vectors = stored[space]
        queries = near(vectors, QUERIES, np.random.default_rng(8))
        figures = {}
        grown = 0
        for total in (2 * SPACE, large):
            started = time.perf_counter()
            _crowd(db.owner_url, others, total - SPACE - grown, grown)
            grown = total - SPACE
            took = time.perf_counter() - started
            figures[total] = _measure(admin, at, dek, queries)
            f = figures[total]
            warm, cold = (
                f"{ms(p50(f['warm']))}/{ms(p95(f['warm']))}",
                f"{ms(p50(f['cold']))}/{ms(p95(f['cold']))}",
            )
            print(f"   table of {total:>9,} (grown in {took:.0f} s): p50/p95 warm {warm} ms, cold {cold}")
        small, big = figures[2 * SPACE], figures[large]
        print(
            f"   {large:,} against {2 * SPACE:,}: warm p95 {p95(big['warm']) / p95(small['warm']):.2f}x,"
            f" cold p95 {p95(big['cold']) / p95(small['cold']):.2f}x (target: within 1.5x)"
        )
        admin.close()
    finally:
        try:
            embedded.stop(home)
        finally:
            shutil.rmtree(home, ignore_errors=True)
