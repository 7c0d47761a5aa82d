"""Filtered vector search: what a tenant gets back from the HNSW index, against the exact answer.

HNSW scans the whole table's graph (every tenant's rows) before RLS and the user filter; with
iterative scans off it can return fewer than k rows, and a tenant with few rows may be better
served by the btree on user_id. Measured, not assumed: the query has the shape of
sessions.nearest, runs as the app role with the tenant set (RLS in force), and the exact
answer comes from the same query with index scans off (a sequential scan and a sort)."""

from __future__ import annotations

import re
import time

import numpy as np
import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector

from .common import RUN, ms, p50, p95, section
from .seed import MODEL

EF_SEARCH = (40, 100, 200, 400)
ITERATIVE = ("strict_order", "relaxed_order", "off")

SQL = """
SELECT s.id, s.embedding::vector(384) <=> %(q)s AS distance
FROM sessions s
JOIN session_versions v ON v.session_id = s.id AND v.version = s.version
WHERE s.user_id = %(user_id)s AND vector_dims(s.embedding) = 384
  AND s.embedding_model = %(model)s
  AND (%(repo)s = '' OR s.repo = %(repo)s)
  AND s.id IS DISTINCT FROM %(exclude)s
ORDER BY s.embedding::vector(384) <=> %(q)s
LIMIT %(limit)s
"""


def _probes(conn: psycopg.Connection, user_id: str, count: int, seed: int) -> list[Vector]:
    """Queries near the tenant's own sessions (a stored vector plus noise), as a search for
    "something like that session" would be."""
    with conn.transaction():
        _tenant(conn, user_id)
        rows = conn.execute(
            "SELECT embedding FROM sessions WHERE user_id = %s ORDER BY md5(id::text) LIMIT %s",
            (user_id, count),
        ).fetchall()
    rng = np.random.default_rng(seed)
    out = []
    for (vector,) in rows:
        v = np.asarray(vector.to_list(), dtype=np.float32)
        v = v + 0.5 * rng.standard_normal(v.shape).astype(np.float32) / np.sqrt(v.size)
        out.append(Vector((v / np.linalg.norm(v)).tolist()))
    return out


def _tenant(conn: psycopg.Connection, user_id: str) -> None:
    conn.execute("SELECT set_config('app.user_id', %s, true)", (user_id,))


def _plan(conn: psycopg.Connection, params: dict) -> str:
    text = "\n".join(r[0] for r in conn.execute("EXPLAIN " + SQL, params).fetchall())
    for pattern in (r"Index Scan using (\w+) on sessions", r"Index Only Scan using (\w+) on sessions"):
        if found := re.search(pattern, text):
            return found.group(1)
    if re.search(r"Bitmap Index Scan on (\w+)", text):
        return "bitmap " + re.search(r"Bitmap Index Scan on (\w+)", text).group(1)
    return "seq scan" if "Seq Scan on sessions" in text else text.splitlines()[0][:30]


def filtered_recall(app_url: str, tenants: list[tuple[str, str]], k: int = 10, queries: int = 25) -> None:
    section(
        "Filtered vector search: recall@10 and latency per tenant and setting",
        f"{RUN} --only recall",
        f"{queries} queries per tenant (a stored vector of the tenant + noise), k={k}, as the app role under RLS;",
        "exact = same query with enable_indexscan=off; latency = the SELECT alone; rows = rows returned.",
        "search_sessions itself runs strict_order / ef_search 100 (sessions.nearest).",
    )
    with psycopg.connect(app_url, prepare_threshold=None) as conn:
        register_vector(conn)
        max_tuples = conn.execute("SHOW hnsw.max_scan_tuples").fetchone()[0]
        print(f"   hnsw.max_scan_tuples = {max_tuples} (default)")
        print(
            f"   {'tenant':22} {'iterative_scan':14} {'ef':>4} {'plan':24} {'recall':>6} {'min':>5}"
            f" {'rows':>5} {'p50 ms':>8} {'p95 ms':>8}"
        )
        for label, user_id in tenants:
            probes = _probes(conn, user_id, queries, seed=11)
            base = {"user_id": user_id, "model": MODEL, "repo": "", "exclude": None, "limit": k}
            exact, exact_times = [], []
            for q in probes:
                with conn.transaction():
                    _tenant(conn, user_id)
                    conn.execute("SET LOCAL enable_indexscan = off")
                    started = time.perf_counter()
                    exact.append({r[0] for r in conn.execute(SQL, {**base, "q": q}).fetchall()})
                    exact_times.append(time.perf_counter() - started)
            for mode in ITERATIVE:
                for ef in EF_SEARCH:
                    recalls, returned, samples, plan = [], [], [], ""
                    for q, truth in zip(probes, exact, strict=True):
                        with conn.transaction():
                            _tenant(conn, user_id)
                            conn.execute(
                                "SELECT set_config('hnsw.iterative_scan', %s, true),"
                                " set_config('hnsw.ef_search', %s, true)",
                                (mode, str(ef)),
                            )
                            plan = plan or _plan(conn, {**base, "q": q})
                            started = time.perf_counter()
                            got = {r[0] for r in conn.execute(SQL, {**base, "q": q}).fetchall()}
                            samples.append(time.perf_counter() - started)
                        recalls.append(len(got & truth) / max(1, len(truth)))
                        returned.append(len(got))
                    print(
                        f"   {label:22} {mode:14} {ef:4d} {plan:24} {np.mean(recalls):6.3f}"
                        f" {min(recalls):5.2f} {np.mean(returned):5.1f} {ms(p50(samples))} {ms(p95(samples))}"
                    )
            rows = np.mean([len(t) for t in exact])
            print(
                f"   {label:22} {'exact':14} {'-':>4} {'(index scans off)':24} {1.0:6.3f} {1.0:5.2f}"
                f" {rows:5.1f} {ms(p50(exact_times))} {ms(p95(exact_times))}"
            )
