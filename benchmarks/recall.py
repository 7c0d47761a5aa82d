"""Filtered vector search: what a tenant gets back from the HNSW index, against the exact answer.

HNSW scans the whole table's graph (every tenant's rows) before RLS and the user filter; with
iterative scans off it can return fewer than k rows, and a tenant with few rows may be better
served by the btree on user_id. Measured, not assumed: the query has the shape of
sessions.nearest, runs as the app role with the tenant set (RLS in force), and the exact
answer comes from the same query with index scans off (a sequential scan and a sort)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

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
    if found := re.search(r"Bitmap Index Scan on (\w+)", text):
        return "bitmap " + found.group(1)
    return "seq scan" if "Seq Scan on sessions" in text else text.splitlines()[0][:30]


# Make the planner take the HNSW index: it is then the only way to an ordered result.
FORCE_HNSW = (
    "SET LOCAL enable_sort = off",
    "SET LOCAL enable_bitmapscan = off",
    "SET LOCAL enable_seqscan = off",
)


@dataclass
class Tenant:
    label: str
    user_id: str
    force_hnsw: bool = False


def filtered_recall(app_url: str, tenants: list[Tenant], k: int = 10, queries: int = 25) -> None:
    section(
        "Filtered vector search: recall@10 and latency per tenant and setting",
        f"{RUN} --only recall",
        f"{queries} queries per tenant (a stored vector of the tenant + noise), k={k}, as the app role",
        "under RLS, query shape of sessions.nearest; exact = the same query with enable_indexscan=off;",
        "recall = mean (min) share of the exact top 10 returned; rows = rows returned (mean);",
        "latency = the SELECT alone, after one warm-up. search_sessions runs strict_order, ef_search 100.",
        "'HNSW forced': enable_sort/bitmapscan/seqscan off, i.e. a planner that misjudged the tenant.",
    )
    with psycopg.connect(app_url, prepare_threshold=None) as conn:
        register_vector(conn)
        conn.execute("SELECT '[1]'::vector")  # loads pgvector, which defines its settings
        max_tuples, memory = conn.execute(
            "SELECT current_setting('hnsw.max_scan_tuples', true),"
            " current_setting('hnsw.scan_mem_multiplier', true)"
        ).fetchone()
        conn.rollback()
        print(f"   hnsw.max_scan_tuples = {max_tuples}, hnsw.scan_mem_multiplier = {memory} (defaults)")
        print(
            f"   {'tenant':28} {'iterative_scan':14} {'ef':>4} {'plan':28} {'recall':>6} {'(min)':>5}"
            f" {'rows':>5} {'p50 ms':>8} {'p95 ms':>8}"
        )
        for tenant in tenants:
            _one_tenant(conn, tenant, k, queries)


def _one_tenant(conn: psycopg.Connection, tenant: Tenant, k: int, queries: int) -> None:
    probes = _probes(conn, tenant.user_id, queries, seed=11)
    base = {"user_id": tenant.user_id, "model": MODEL, "repo": "", "exclude": None, "limit": k}

    def run(settings: list[str], q: Vector, explain: bool = False) -> tuple[set, float, str]:
        with conn.transaction():
            _tenant(conn, tenant.user_id)
            for statement in settings:
                conn.execute(statement)
            plan = _plan(conn, {**base, "q": q}) if explain else ""
            started = time.perf_counter()
            got = {r[0] for r in conn.execute(SQL, {**base, "q": q}).fetchall()}
            return got, time.perf_counter() - started, plan

    def row(mode: str, ef: str, settings: list[str], truth: list[set] | None) -> list[set]:
        plan = run(settings, probes[0], explain=True)[2]  # also the warm-up
        results, samples = [], []
        for q in probes:
            got, took, _ = run(settings, q)
            results.append(got)
            samples.append(took)
        truth = truth or results
        recalls = [len(g & t) / max(1, len(t)) for g, t in zip(results, truth, strict=True)]
        print(
            f"   {tenant.label:28} {mode:14} {ef:>4} {plan:28} {np.mean(recalls):6.3f} {min(recalls):5.2f}"
            f" {np.mean([len(g) for g in results]):5.1f} {ms(p50(samples))} {ms(p95(samples))}"
        )
        return results

    exact = row("exact", "-", ["SET LOCAL enable_indexscan = off"], None)
    forced = list(FORCE_HNSW) if tenant.force_hnsw else []
    for mode in ITERATIVE:
        for ef in EF_SEARCH:
            settings = [
                f"SET LOCAL hnsw.iterative_scan = {mode}",  # literals from the tables above
                f"SET LOCAL hnsw.ef_search = {ef}",
                *forced,
            ]
            row(mode, str(ef), settings, exact)
