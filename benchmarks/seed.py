"""The seeded database: 100,000 encrypted sessions across 1,000 users, kept in a cache folder.

One large tenant (20,000 sessions), one small one (10), the rest spread unevenly over 998
users. Rows go in with binary COPY as the owner role (a superuser: RLS does not apply to the
load), with the HNSW indexes dropped during the load and rebuilt after from their own
definitions. Every session has one version, AES-GCM sealed under its user's data key exactly
as the server seals it, so load/search/list over HTTP read real rows.

Embeddings: all-MiniLM-L6-v2 runs at ~150 sentences/s on 2 CPU cores (100,000 would take
~11 minutes), so the vectors are random unit vectors with clustered structure instead:
200 areas -> 2,000 topics (cosine ~0.8 to their area) -> sessions (cosine ~0.75 to their
topic), each tenant drawing from its own subset of topics. They are labelled with the local
model's name so that search_sessions compares against them.

The cache is reused when the seed parameters and the migration files match; otherwise it
is rebuilt. Default folder: ~/.sessionvault-bench, or /var/tmp/sessionvault-bench when running
as root (pgserver then runs postgres as its own user, who cannot enter /root, and would widen
the permissions of every parent folder). Override with SESSIONVAULT_BENCH_HOME."""

from __future__ import annotations

import base64
import contextlib
import datetime
import hashlib
import json
import os
import random
import secrets
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg

PARAMS = {
    "format": 1,
    "sessions": 100_000,
    "users": 1_000,
    "large_tenant": 20_000,
    "small_tenant": 10,
    "dims": 384,
    "areas": 200,
    "topics": 2_000,
    "topic_noise": 0.75,  # cosine(topic, area) ~ 1/sqrt(1 + 0.75^2) = 0.8
    "session_noise": 0.9,  # cosine(session, topic) ~ 0.74
    "seed": 7,
    "vectors": "clustered random unit vectors",
}
MODEL = "local:all-MiniLM-L6-v2"  # what LocalEmbedder records: search compares only the same model


@dataclass
class Seeded:
    home: Path
    db: object  # sessionvault.local.host.embedded.Embedded
    master_key: str
    audit_salt: str
    large: str  # user ids
    small: str
    typical: str
    reused: bool
    seconds: float

    def describe(self) -> str:
        how = "reused from cache" if self.reused else f"seeded in {self.seconds:.0f} s"
        return (
            f"{PARAMS['sessions']:,} sessions / {PARAMS['users']:,} users"
            f" (large tenant {PARAMS['large_tenant']:,}, small tenant {PARAMS['small_tenant']}),"
            f" {PARAMS['dims']}-d {PARAMS['vectors']}; {how}; cache {self.home}"
        )


def cache_home() -> Path:
    configured = os.environ.get("SESSIONVAULT_BENCH_HOME")
    if configured:
        return Path(configured).expanduser()
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/tmp/sessionvault-bench")
    return Path.home() / ".sessionvault-bench"


def migrations() -> dict[str, str]:
    from sessionvault.db.migrations import checksum, migration_files, migrations_dir

    return {f.name: checksum(f) for f in migration_files(migrations_dir())}


def cache_key(schema: dict[str, str]) -> str:
    blob = json.dumps({"params": PARAMS, "migrations": schema}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _why_stale(meta: dict, schema: dict[str, str]) -> str:
    if meta.get("params") != PARAMS:
        return "seed parameters changed"
    old = meta.get("migrations", {})
    changed = sorted(n for n in set(old) | set(schema) if old.get(n) != schema.get(n))
    return f"migration(s) {', '.join(changed)} added or changed" if changed else "format changed"


def open_seeded(fresh: bool = False) -> Seeded:
    from sessionvault.local.host import embedded

    home = cache_home()
    meta_file = home / "bench-seed.json"
    schema = migrations()
    key = cache_key(schema)
    if not fresh and meta_file.exists():
        meta = json.loads(meta_file.read_text())
        if meta.get("key") == key:
            started = time.perf_counter()
            db = embedded.start(home)
            return Seeded(
                home, db, meta["master_key"], meta["audit_salt"], meta["large"], meta["small"],
                meta["typical"], True, time.perf_counter() - started,
            )  # fmt: skip
        print(f"   seed cache {home}: {_why_stale(meta, schema)}; rebuilding")
    if home.exists():
        with contextlib.suppress(Exception):  # not running
            embedded.stop(home)
        shutil.rmtree(home)
    started = time.perf_counter()
    db = embedded.start(home)
    master_key = base64.b64encode(os.urandom(32)).decode()
    audit_salt = secrets.token_urlsafe(24)
    large, small, typical = _seed(db, master_key)
    meta = {"key": key, "master_key": master_key, "audit_salt": audit_salt}
    meta.update(large=large, small=small, typical=typical, params=PARAMS, migrations=schema)
    meta_file.write_text(json.dumps(meta, indent=1))
    meta_file.chmod(0o600)
    return Seeded(
        home, db, master_key, audit_salt, large, small, typical, False, time.perf_counter() - started
    )


# --- generation ------------------------------------------------------------------------------

VERBS = ["refactor", "fix", "add tests for", "document", "speed up", "remove", "migrate", "debug"]
THINGS = [
    "login flow", "payment webhook", "search index", "CSV export", "rate limiter", "image upload",
    "session cache", "email queue", "billing report", "feature flag", "GraphQL schema", "cron job",
    "websocket server", "SQL migration", "docker build", "i18n catalog", "audit log", "JWT refresh",
]  # fmt: skip
PLACES = ["the API", "the admin panel", "the mobile app", "the worker", "CI", "the checkout", "staging"]
WHY = [
    "users saw timeouts", "the tests were flaky", "memory kept growing", "a customer asked",
    "the query was slow", "security review flagged it", "it broke on Safari", "costs went up",
]  # fmt: skip
CLIENTS = ["claude-code", "cursor", "codex", "windsurf"]


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _counts(rng: np.random.Generator) -> list[int]:
    """Rows per user: [large, small, then 998 uneven (log-normal) shares of the rest]."""
    rest_users = PARAMS["users"] - 2
    rest = PARAMS["sessions"] - PARAMS["large_tenant"] - PARAMS["small_tenant"]
    weights = rng.lognormal(0.0, 1.0, rest_users)
    counts = np.maximum(1, np.floor(weights / weights.sum() * rest)).astype(int)
    while counts.sum() > rest:  # the floor of 1 can overshoot by a few
        counts[np.argmax(counts)] -= 1
    while counts.sum() < rest:
        counts[np.argmin(counts)] += 1
    return [PARAMS["large_tenant"], PARAMS["small_tenant"], *counts.tolist()]


def _record(rnd: random.Random, name: str, repo: str, client: str, summary: str) -> dict:
    from sessionvault.core import records

    pick = rnd.choice
    payload = {
        "name": name,
        "repo": repo,
        "summary": summary,
        "plan": [f"{pick(VERBS)} the {pick(THINGS)}" for _ in range(rnd.randint(3, 8))],
        "decisions": [
            {"decision": f"keep the {pick(THINGS)} in {pick(PLACES)}", "reason": pick(WHY)}
            for _ in range(rnd.randint(0, 3))
        ],
        "todos": [f"{pick(VERBS)} the {pick(THINGS)}" for _ in range(rnd.randint(1, 4))],
        "files": [f"src/{pick(THINGS).replace(' ', '_').lower()}.py" for _ in range(rnd.randint(1, 5))],
        "errors": [f"TimeoutError in {pick(THINGS)}" for _ in range(rnd.randint(0, 2))],
        "tried": [f"{pick(VERBS)} the {pick(THINGS)}: did not help" for _ in range(rnd.randint(0, 2))],
        "client": client,
    }
    return records.parse(records.SaveArgs, payload).model_dump(mode="json")


def _seed(db, master_key: str) -> tuple[str, str, str]:
    from pgvector.psycopg import register_vector
    from psycopg.rows import dict_row

    from sessionvault.core import crypto, records
    from sessionvault.core.keys import WrappedKey
    from sessionvault.db.pool import Database, Tenant
    from sessionvault.runtime import key_provider
    from sessionvault.service import accounts, vector_index

    from .common import make_settings

    rng = np.random.default_rng(PARAMS["seed"])
    rnd = random.Random(PARAMS["seed"])
    counts = _counts(rng)
    provider = key_provider(make_settings(db.app_url, master_key, "seed-salt-0123456789"))

    t = time.perf_counter()
    admin = Database(db.admin_url, max_size=2)
    try:
        user_ids = [
            accounts.create_user(admin, provider, f"bench-seed-{i:04d}") for i in range(PARAMS["users"])
        ]
    finally:
        admin.close()
    with psycopg.connect(db.owner_url, row_factory=dict_row) as conn:
        rows = conn.execute("SELECT id::text AS id, dek_wrapped, key_id FROM users").fetchall()
    deks = {r["id"]: provider.unwrap(r["id"], WrappedKey.from_row(r)) for r in rows}
    print(f"   seed: {len(user_ids)} users with data keys in {time.perf_counter() - t:.1f} s")

    t = time.perf_counter()
    dims = PARAMS["dims"]
    areas = _unit(rng.standard_normal((PARAMS["areas"], dims)))
    noise = _unit(rng.standard_normal((PARAMS["topics"], dims)))
    topics = _unit(areas[np.arange(PARAMS["topics"]) % PARAMS["areas"]] + PARAMS["topic_noise"] * noise)
    now = datetime.datetime.now(datetime.UTC)
    session_rows, version_rows = [], []
    for user_id, count in zip(user_ids, counts, strict=True):
        own_topics = rng.choice(PARAMS["topics"], size=int(np.clip(count // 8, 3, 500)), replace=False)
        chosen = rng.choice(own_topics, size=count)
        vectors = _unit(topics[chosen] + PARAMS["session_noise"] * _unit(rng.standard_normal((count, dims))))
        repos = [f"github.com/org{user_id[:6]}/app{j}" for j in range(1 + min(7, count // 15))]
        owner = uuid.UUID(user_id)
        for i in range(count):
            session_id = uuid.UUID(int=rnd.getrandbits(128), version=4)
            topic = int(chosen[i])
            thing, verb = THINGS[topic % len(THINGS)], VERBS[(topic // len(THINGS)) % len(VERBS)]
            name = f"{verb.split()[0]}-{thing.replace(' ', '-').lower()}-{i}"
            repo = repos[rnd.randrange(len(repos))]
            client = rnd.choice(CLIENTS)
            summary = f"{verb} the {thing} in {rnd.choice(PLACES)} because {rnd.choice(WHY)} (topic {topic})"
            at = now - datetime.timedelta(seconds=rnd.uniform(60, 180 * 86400))
            record = _record(rnd, name, repo, client, summary)
            record["saved_at"] = at.isoformat(timespec="seconds")
            aad = crypto.session_aad(user_id, str(session_id), name, 1)
            nonce, ciphertext = crypto.seal(deks[user_id], json.dumps(record).encode(), aad)
            preview = records.preview(summary)
            sealed = vector_index.seal_vector(deks[user_id], user_id, f"{session_id}:1", MODEL, vectors[i])
            session_rows.append(
                (session_id, owner, name, repo, preview, client, 1, vectors[i], sealed, len(session_rows) + 1,
                 MODEL, at, at)
            )  # fmt: skip
            version_rows.append((session_id, owner, 1, nonce, ciphertext, client, at))
    print(f"   seed: {len(session_rows):,} records generated and sealed in {time.perf_counter() - t:.1f} s")

    with psycopg.connect(db.owner_url) as conn:
        register_vector(conn)
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        hnsw = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
            " AND tablename = 'sessions' AND indexdef ILIKE '%USING hnsw%'"
        ).fetchall()
        for name, _ in hnsw:
            conn.execute(f'DROP INDEX "{name}"')
        t = time.perf_counter()
        with conn.cursor().copy(
            "COPY sessions (id, user_id, name, repo, preview, client, version, embedding, sealed_vector,"
            " vector_seq, embedding_model, created_at, updated_at) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(
                [
                    *(
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
                    ),
                    *("timestamptz", "timestamptz"),
                ]
            )
            for row in session_rows:
                copy.write_row(row)
        with conn.cursor().copy(
            "COPY session_versions (session_id, user_id, version, nonce, ciphertext, client, saved_at)"
            " FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["uuid", "uuid", "int4", "bytea", "bytea", "text", "timestamptz"])
            for row in version_rows:
                copy.write_row(row)
        print(f"   seed: COPY of sessions and versions in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        for _, definition in hnsw:
            conn.execute(definition)
        conn.commit()
        print(f"   seed: {len(hnsw)} HNSW index(es) rebuilt in {time.perf_counter() - t:.1f} s")
        # The sealed vectors' sequence past every seeded head, and each space's segments made,
        # as the compact_vectors task leaves them (the HNSW index stays: the baseline's).
        conn.execute("SELECT setval('session_vector_seq', %s)", (len(session_rows) + 1,))
        conn.commit()
    t = time.perf_counter()
    admin = Database(db.admin_url, max_size=1)
    for user_id in user_ids:
        vector_index.compact(admin, Tenant(user_id), deks[user_id], MODEL)
    admin.close()
    print(f"   seed: every space's vectors compacted into sealed segments in {time.perf_counter() - t:.1f} s")
    with psycopg.connect(db.owner_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE sessions")
        conn.execute("VACUUM ANALYZE session_versions")
        conn.execute("CHECKPOINT")
    ordered = sorted(zip(counts[2:], user_ids[2:], strict=True))
    return user_ids[0], user_ids[1], ordered[len(ordered) // 2][1]


def forget_run_users(owner_url: str, prefix: str) -> int:
    """Remove the users one run created (named `prefix`...) and every row they own."""
    with psycopg.connect(owner_url) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM users WHERE name LIKE %s", (prefix + "%",))]
        if not ids:
            return 0
        tables = conn.execute(
            "SELECT DISTINCT table_name FROM information_schema.columns WHERE table_schema = 'public'"
            " AND column_name = 'user_id' AND table_name <> 'users'"
            " AND table_name IN (SELECT table_name FROM information_schema.tables"
            "                    WHERE table_schema = 'public' AND table_type = 'BASE TABLE')"
        ).fetchall()
        for (table,) in tables:
            conn.execute(f'DELETE FROM "{table}" WHERE user_id = ANY(%s)', (ids,))
        conn.execute("DELETE FROM users WHERE id = ANY(%s)", (ids,))
    return len(ids)
