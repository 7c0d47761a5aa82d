"""SessionVault benchmarks: prints the numbers kept in BENCHMARKS.md.

    make bench            (or: .venv/bin/python benchmarks/run.py)

Runs against a throwaway embedded PostgreSQL as the app role, with the real local model."""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from pgvector import Vector

from sessionvault.core import records
from sessionvault.core.embeddings import LocalEmbedder
from sessionvault.core.keys import WrappedKey
from sessionvault.core.vault import Principal
from sessionvault.db import identity as accounts
from sessionvault.db import ratelimit
from sessionvault.db.pool import Database
from sessionvault.local import embedded
from sessionvault.runtime import open_runtime
from sessionvault.server.tools import TOOLS
from sessionvault.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
ADMIN: list[Database] = []  # users are created as the admin role, as the CLI does


def percentiles(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[int(len(ms) * 0.95) - 1]
    return f"p50 {statistics.median(ms):6.1f} ms   p95 {p95:6.1f} ms   (n={len(ms)})"


def handler_import_time(runs: int = 5) -> None:
    code = (
        "import time; t = time.perf_counter(); "
        "import mangum, sessionvault.server.app, sessionvault.settings, sessionvault.runtime; "
        "import sys; heavy = [m for m in ('torch', 'openai', 'boto3', 'numpy') if m in sys.modules]; "
        "print(time.perf_counter() - t, heavy)"
    )
    samples, heavy = [], ""
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        seconds, heavy = out.stdout.split(" ", 1)
        samples.append(float(seconds))
    print(f"MCP handler imports (cold, {runs} processes): median {statistics.median(samples) * 1000:.0f} ms")
    print(f"  heavy modules imported at cold start: {heavy.strip()}")


def tools_list_tokens() -> None:
    text = json.dumps([spec.definition().model_dump(by_alias=True, exclude_none=True) for spec in TOOLS])
    print(f"tools/list: {len(text)} characters = ~{len(text) // 4} tokens (characters / 4)")


def user(rt) -> Principal:
    uid = accounts.create_user(ADMIN[0], rt.keys.provider, f"bench-{os.urandom(4).hex()}")
    with ADMIN[0].identity() as conn:
        row = conn.execute("SELECT dek_wrapped, key_id FROM users WHERE id = %s", (uid,)).fetchone()
    return Principal(uid, WrappedKey.from_row(row))


def tool_latencies(rt, n: int = 200) -> None:
    who = user(rt)
    rt.vault.embedder.embed("warm up")
    plan = [f"step {i}: refactor module {i}" for i in range(20)]

    def timed(fn) -> list[float]:
        samples = []
        for i in range(n):
            t = time.perf_counter()
            fn(i)
            samples.append(time.perf_counter() - t)
        return samples

    save = timed(
        lambda i: rt.vault.save(
            who,
            records.parse(
                records.SaveArgs,
                {"name": f"s{i % 50}", "summary": f"session {i} on caching", "plan": plan, "repo": "r"},
            ),
        )
    )
    load = timed(lambda i: rt.vault.load(who, records.parse(records.LoadArgs, {"name": f"s{i % 50}"})))
    latest = timed(lambda i: rt.vault.load(who, records.parse(records.LoadArgs, {"repo": "r"})))
    listed = timed(lambda i: rt.vault.list(who, records.parse(records.ListArgs, {})))
    search = timed(lambda i: rt.vault.search(who, records.parse(records.SearchArgs, {"query": f"cache {i}"})))
    limit = timed(lambda i: ratelimit.check(rt.db, who.user_id, 10**6, 10**7))
    print("Vault operations, embedded PostgreSQL, local model, 50 sessions with history:")
    for name, samples in (
        ("save_session (incl. embedding)", save),
        ("load_session by name", load),
        ("load_session latest for repo", latest),
        ("list_sessions", listed),
        ("search_sessions (incl. embedding)", search),
        ("rate-limit check", limit),
    ):
        print(f"  {name:34} {percentiles(samples)}")


# Session-like sentences embedded by the real model: HNSW recall depends on the data's shape,
# and uniform random vectors (no structure at all) would understate it badly.
VERBS = ["refactor", "fix", "add tests for", "document", "speed up", "remove", "migrate", "debug"]
THINGS = [
    "login flow",
    "payment webhook",
    "search index",
    "CSV export",
    "rate limiter",
    "image upload",
    "session cache",
    "email queue",
    "billing report",
    "feature flag",
    "GraphQL schema",
    "cron job",
    "websocket server",
    "SQL migration",
    "docker build",
    "i18n catalog",
    "audit log",
    "JWT refresh",
]
PLACES = ["the API", "the admin panel", "the mobile app", "the worker", "CI", "the checkout", "staging"]
WHY = [
    "users saw timeouts",
    "the tests were flaky",
    "memory kept growing",
    "a customer asked",
    "the query was slow",
    "security review flagged it",
    "it broke on Safari",
    "costs went up",
]


def _plan_index(conn, sql: str, params: tuple) -> str:
    plan = " ".join(str(r) for r in conn.execute("EXPLAIN " + sql, params).fetchall())
    for name in (
        "sessions_embedding_384",
        "sessions_repo_recent",
        "sessions_recent",
        "sessions_user_id_name",
    ):
        if name in plan:
            return name
    return "sequential scan"


def filtered_recall(
    rt, owner_url: str, big: int = 20_000, small: int = 10, k: int = 10, queries: int = 20
) -> None:
    """HNSW runs before RLS and filters: measure what a tenant gets back, do not assume."""
    rng = random.Random(7)
    noisy, tiny = user(rt), user(rt)
    encoder = LocalEmbedder._load()

    def sentences(n: int) -> list[str]:
        return [
            f"{rng.choice(VERBS)} the {rng.choice(THINGS)} in {rng.choice(PLACES)} because {rng.choice(WHY)}"
            for _ in range(n)
        ]

    def vectors(n: int) -> list[Vector]:
        return [Vector(v) for v in encoder.encode(sentences(n), batch_size=256, normalize_embeddings=True)]

    model = rt.vault.embedder.model
    for who, count in ((noisy, big), (tiny, small)):
        with rt.db.tenant(who.user_id) as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO sessions (user_id, name, preview, version, embedding, embedding_model)"
                " VALUES (%s, %s, '', 1, %s, %s)",
                [(who.user_id, f"n{i}", v, model) for i, v in enumerate(vectors(count))],
            )
    probes = vectors(queries * 2)
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("ANALYZE sessions")  # what autovacuum would do: plans follow the statistics
    sql = f"""
        SELECT s.id FROM sessions s
        WHERE s.user_id = %s AND vector_dims(s.embedding) = 384 AND s.embedding_model = %s
        ORDER BY s.embedding::vector(384) <=> %s LIMIT {k}"""
    print(f"Filtered vector search, {big} rows of one tenant, {small} of another, k={k}, {queries} queries:")
    for who, label in ((tiny, "small tenant"), (noisy, "large tenant")):
        for mode, ef in (("off", 40), ("strict_order", 40), ("strict_order", 100), ("strict_order", 400)):
            recall, used = [], ""
            for q in range(queries):
                params = (who.user_id, model, probes[q])
                with rt.db.tenant(who.user_id) as conn:
                    conn.execute(f"SET LOCAL hnsw.iterative_scan = {mode}")
                    conn.execute(f"SET LOCAL hnsw.ef_search = {ef}")
                    used = _plan_index(conn, sql, params)
                    got = {r["id"] for r in conn.execute(sql, params).fetchall()}
                    conn.execute("SET LOCAL enable_indexscan = off")  # the exact answer
                    exact = {r["id"] for r in conn.execute(sql, params).fetchall()}
                recall.append(len(got & exact) / len(exact))
            print(
                f"  {label}: iterative_scan={mode:12} ef_search={ef:3} plan: {used:22}"
                f" recall@{k} mean {statistics.mean(recall):.3f}"
            )


def main() -> None:
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores\n")
    handler_import_time()
    tools_list_tokens()
    home = Path(tempfile.mkdtemp(prefix="sessionvault-bench-"))
    try:
        db = embedded.start(home)
        settings = Settings.from_env(
            {},
            database_url=db.app_url,
            master_key=base64.b64encode(os.urandom(32)).decode(),
            audit_salt="bench-salt-0123456789",
            embeddings="local",
        )
        rt = open_runtime(settings)
        ADMIN.append(Database(db.admin_url))
        print()
        tool_latencies(rt)
        print()
        filtered_recall(rt, db.owner_url)
        rt.close()
        ADMIN.pop().close()
        embedded.stop(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
