"""Load, list and search past 100,000 sessions (issue 29 item 6), beside the 100,000 figures.

Two seeded databases at once: seed.py's 100,000 (20,000 in the large tenant) and
seed_scaled.py's larger one (BENCH_MILLION_SESSIONS, default 300,000, the issue's shape: 1% as
many users, 5% of the rows in one tenant). The same calls go to both, interleaved call by call,
so that the machine's load falls on both alike:

load     Vault.load by name (service + database + decryption, with the related sessions it
         looks up by the session's own vector: one HNSW query), in-process, as the app role;
list     Vault.list, the first page (20);
search   the database part of search_sessions: sessions.nearest (search_sessions' settings,
         relaxed_order iterative scan re-sorted, ef_search 100) for a query vector near the tenant's own,
         5 results, as the app role under RLS. The embedding of the query text is left out: it
         costs the same at any size (a local model's ~10-50 ms here, OpenAI's network call on
         Lambda), and these vectors are not the model's.

Tenants: the large one, a typical one (the median user), the small one (10 sessions); each
call samples the tenant's sessions at random. Recall@10 at search_sessions' own setting
against the exact answer (index scans off), 25 queries per tenant, as benchmarks/recall.py."""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from . import recall, seed, seed_scaled
from .common import RUN, make_settings, p50, p95, section

N = 300  # timed calls per kind, tenant and size: a p95 of 60 moved 5.6-39 ms between runs
WARM = 30  # untimed calls of each first: the larger tables do not fit in shared_buffers
# (row label, settings): search_sessions' own (db/search.py), and the one it replaced
SETTINGS = (
    ("relaxed_order ef 100 (now)", ("relaxed_order", 100)),
    ("strict_order ef 100 (before)", ("strict_order", 100)),
)
SIZES = ("100k", "scaled")


def _names(owner_url: str, user_id: str, count: int) -> list[str]:
    with psycopg.connect(owner_url) as conn:
        rows = conn.execute(
            "SELECT name FROM sessions WHERE user_id = %s ORDER BY md5(id::text) LIMIT %s", (user_id, count)
        ).fetchall()
    return [r[0] for r in rows]


def _sizes(owner_url: str) -> list[tuple[str, int]]:
    with psycopg.connect(owner_url) as conn:
        return [
            (str(name), int(size))
            for name, size in conn.execute(
                "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
                " AND (c.relname IN ('sessions', 'session_versions')"
                "      OR c.oid IN (SELECT indexrelid FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid"
                "                   WHERE t.relname = 'sessions'))"
                " ORDER BY pg_total_relation_size(c.oid) DESC"
            ).fetchall()
        ]


class Target:
    """One seeded database: its runtime (pool of 2, as the app role) and its three tenants."""

    def __init__(self, label: str, seeded: seed.Seeded) -> None:
        from sessionvault.runtime import open_runtime

        from .workload import principal

        self.label, self.seeded = label, seeded
        db = seeded.db
        self.rt = open_runtime(make_settings(db.app_url, seeded.master_key, seeded.audit_salt), pool_size=2)
        self.tenants = {"large": seeded.large, "typical": seeded.typical, "small": seeded.small}
        self.principals = {k: principal(db.owner_url, uid) for k, uid in self.tenants.items()}
        self.names = {k: _names(db.owner_url, uid, 200) for k, uid in self.tenants.items()}
        with psycopg.connect(db.app_url) as conn:
            register_vector(conn)
            self.probes = {k: recall._probes(conn, uid, 25, seed=11) for k, uid in self.tenants.items()}

    def call(self, kind: str, tenant: str, rnd: random.Random) -> float:
        from sessionvault.core import records
        from sessionvault.db import search
        from sessionvault.db.pool import Tenant

        started = time.perf_counter()
        if kind == "load":
            args: Any = records.parse(records.LoadArgs, {"name": rnd.choice(self.names[tenant])})
            self.rt.vault.load(self.principals[tenant], args)
        elif kind == "list":
            self.rt.vault.list(self.principals[tenant], records.parse(records.ListArgs, {}))
        else:
            vector = rnd.choice(self.probes[tenant]).to_list()
            search.nearest(self.rt.db, Tenant(self.tenants[tenant]), vector, seed.MODEL, limit=5)
        return time.perf_counter() - started


def million(fresh: bool = False) -> None:
    sessions = seed_scaled.wanted_sessions()
    section(
        f"Past 100,000 sessions: load, list and search at 100,000 and at {sessions:,} (issue 29 item 6)",
        f"{RUN} --only million   (BENCH_MILLION_SESSIONS={sessions}: the larger size; the issue's: 1000000)",
        f"in-process as the app role (RLS), {N} calls per kind, tenant and size after {WARM} untimed; the",
        "two sizes interleaved call by call; search = the database part (sessions.nearest, 5 results).",
    )
    t = time.perf_counter()
    base = seed.open_seeded(fresh=fresh)
    print(f"   100,000: {base.describe()}")
    big = seed_scaled.open_scaled(fresh=fresh, sessions=sessions)
    p = seed_scaled.params(sessions)
    timings = seed_scaled.meta().get("timings", {})
    print(
        f"   {sessions:,}: {p['users']:,} users (large tenant {p['large_tenant']:,}, small"
        f" {p['small_tenant']})"
        f"; {'reused from cache' if big.reused else f'seeded in {big.seconds:.0f} s'}; cache {big.home}"
    )
    if timings:
        print(
            "   seeding it took: users {users_s:.0f} s; generate + seal + COPY {generate_seal_copy_s:.0f} s"
            " (COPY {copy_s:.0f} s); HNSW index build {hnsw_build_s:.0f} s; VACUUM ANALYZE"
            " {vacuum_analyze_s:.0f} s".format(**timings)
        )
    print(f"   both ready in {time.perf_counter() - t:.0f} s")
    for label, seeded in (("100k", base), (f"{sessions // 1000}k", big)):
        sizes = ", ".join(f"{name} {size / 2**20:,.0f} MiB" for name, size in _sizes(seeded.db.owner_url))
        print(f"   sizes at {label}: {sizes}")
    targets = [Target("100k", base), Target(f"{sessions // 1000}k", big)]
    try:
        _latency(targets)
        _recall(targets)
    finally:
        for target in targets:
            target.rt.close()


def _latency(targets: list[Target]) -> None:
    rnd = random.Random(29)
    samples: dict[tuple[str, str, str], list[float]] = {}
    for kind in ("load", "list", "search"):
        for tenant in ("large", "typical", "small"):
            for i in range(N + WARM):
                for target in targets:
                    took = target.call(kind, tenant, rnd)
                    if i >= WARM:
                        samples.setdefault((kind, tenant, target.label), []).append(took)
    a, b = targets[0].label, targets[1].label
    print(
        f"   {'call':8} {'tenant':8} {a + ' p50':>9} {'p95':>7}  {b + ' p50':>9} {'p95':>7}  {'p95 ratio':>9}"
    )
    for kind in ("load", "list", "search"):
        for tenant in ("large", "typical", "small"):
            x, y = samples[(kind, tenant, a)], samples[(kind, tenant, b)]
            print(
                f"   {kind:8} {tenant:8} {p50(x) * 1000:9.2f} {p95(x) * 1000:7.2f}  {p50(y) * 1000:9.2f}"
                f" {p95(y) * 1000:7.2f}  {p95(y) / p95(x):8.2f}x"
            )
    print("   (ms; target: p95 within 1.5x of the 100k figure)")


def _recall(targets: list[Target]) -> None:
    print("   recall@10 against the exact answer (index scans off), 25 queries per tenant:")
    print(
        f"   {'size':6} {'tenant':8} {'setting':28} {'plan':24} {'recall':>6} {'(min)':>5}"
        f" {'p50 ms':>7} {'p95 ms':>7}"
    )
    for target in targets:
        with psycopg.connect(target.seeded.db.app_url, prepare_threshold=None) as conn:
            register_vector(conn)
            for tenant, user_id in target.tenants.items():
                base = {"user_id": user_id, "model": seed.MODEL, "repo": "", "exclude": None, "limit": 10}
                exact = [
                    _run(conn, user_id, ["SET LOCAL enable_indexscan = off"], base, q)[0]
                    for q in target.probes[tenant]
                ]
                for label, (mode, ef) in SETTINGS:
                    settings = [f"SET LOCAL hnsw.iterative_scan = {mode}", f"SET LOCAL hnsw.ef_search = {ef}"]
                    plan = _run(conn, user_id, settings, base, target.probes[tenant][0], explain=True)[2]
                    runs = [_run(conn, user_id, settings, base, q) for q in target.probes[tenant]]
                    rates = [len(g & e) / max(1, len(e)) for (g, _, _), e in zip(runs, exact, strict=True)]
                    took = [t for _, t, _ in runs]
                    print(
                        f"   {target.label:6} {tenant:8} {label:28} {plan[:24]:24} {np.mean(rates):6.3f}"
                        f" {min(rates):5.2f} {p50(took) * 1000:7.2f} {p95(took) * 1000:7.2f}"
                    )
                    if tenant != "large":
                        break  # the btree serves the others exactly: one setting says so
    print("   (target: recall >= 0.95)")


def _run(
    conn: psycopg.Connection, user_id: str, settings: list[str], base: dict, q: Any, explain: bool = False
):
    """(ids returned, seconds, plan) of recall.SQL for `q` as the tenant, under `settings`."""
    with conn.transaction():
        recall._tenant(conn, user_id)
        for statement in settings:
            conn.execute(statement)
        plan = recall._plan(conn, {**base, "q": q}) if explain else ""
        started = time.perf_counter()
        ids = {r[0] for r in conn.execute(recall.SQL, {**base, "q": q}).fetchall()}
        return ids, time.perf_counter() - started, plan


if __name__ == "__main__":
    import warnings

    warnings.filterwarnings("ignore")
    million()
