"""A larger seeded database for the `million` section (issue 29 item 6), cached like seed.py's.

The shape of the issue's million (1,000,000 sessions over 10,000 users, one tenant with 50,000)
at any scale: `sessions` rows over sessions/100 users, one large tenant with 5% of the rows
(50,000 of 1,000,000: the same share, so a filtered HNSW search sees the same selectivity),
one small tenant with 10, the rest log-normal over the others. The records, the sealing (AES-GCM
under each user's own data key, as seed.py seals them), the vectors (clustered random unit
vectors, 384-d, labelled with the local model's name) and the load (binary COPY as the owner,
HNSW dropped during the load and rebuilt after from its own definition) are seed.py's; here
they are streamed in chunks so that a million rows never sit in memory at once.

The scale comes from BENCH_MILLION_SESSIONS (default 300,000: what this 2-core machine seeds
in a few minutes; 1,000,000 is the issue's figure). The cache folder is seed.py's with
`-million` appended; it is reused while the parameters and the migrations it was seeded with
are unchanged (a migration added since is applied to it when it starts, as to a deployed
database: reseeding takes minutes)."""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import os
import random
import secrets
import shutil
import time
import uuid
from pathlib import Path

import numpy as np
import psycopg

from . import seed
from .seed import CLIENTS, MODEL, PLACES, THINGS, VERBS, WHY, _record, _unit

DEFAULT_SESSIONS = 300_000
CHUNK = 25_000  # rows per COPY transaction


def params(sessions: int) -> dict[str, object]:
    return {
        "format": 1,
        "sessions": sessions,
        "users": max(10, sessions // 100),
        "large_tenant": sessions // 20,
        "small_tenant": 10,
        "dims": 384,
        "areas": max(200, sessions // 500),
        "topics": max(2_000, sessions // 50),
        "topic_noise": 0.75,
        "session_noise": 0.9,
        "seed": 29,
        "vectors": "clustered random unit vectors",
    }


def wanted_sessions() -> int:
    return int(os.environ.get("BENCH_MILLION_SESSIONS", DEFAULT_SESSIONS))


def home() -> Path:
    return Path(str(seed.cache_home()) + "-million")


def open_scaled(fresh: bool = False, sessions: int | None = None) -> seed.Seeded:
    """The scaled database, seeded now or reused; `meta` timings are in `<home>/bench-seed.json`."""
    from sessionvault.local.host import embedded

    p = params(sessions or wanted_sessions())
    folder = home()
    meta_file = folder / "bench-seed.json"
    schema = seed.migrations()
    if not fresh and meta_file.exists():
        meta = json.loads(meta_file.read_text())
        seeded_with = meta.get("migrations", {})
        if meta.get("params") == p and all(schema.get(n) == c for n, c in seeded_with.items()):
            started = time.perf_counter()
            db = embedded.start(folder)
            return seed.Seeded(
                folder, db, meta["master_key"], meta["audit_salt"], meta["large"], meta["small"],
                meta["typical"], True, time.perf_counter() - started,
            )  # fmt: skip
        print(f"   scaled seed cache {folder}: parameters or migrations changed; rebuilding")
    if folder.exists():
        with contextlib.suppress(Exception):
            embedded.stop(folder)
        shutil.rmtree(folder)
    started = time.perf_counter()
    db = embedded.start(folder)
    master_key = base64.b64encode(os.urandom(32)).decode()
    audit_salt = secrets.token_urlsafe(24)
    timings: dict[str, float] = {}
    large, small, typical = _seed(db, master_key, p, timings)
    meta = {"master_key": master_key, "audit_salt": audit_salt, "params": p, "migrations": schema}
    meta.update(large=large, small=small, typical=typical, timings=timings)
    meta_file.write_text(json.dumps(meta, indent=1))
    meta_file.chmod(0o600)
    return seed.Seeded(
        folder, db, master_key, audit_salt, large, small, typical, False, time.perf_counter() - started
    )


def meta() -> dict[str, object]:
    return dict(json.loads((home() / "bench-seed.json").read_text()))


def _counts(rng: np.random.Generator, p: dict) -> list[int]:
    rest_users = p["users"] - 2
    rest = p["sessions"] - p["large_tenant"] - p["small_tenant"]
    weights = rng.lognormal(0.0, 1.0, rest_users)
    counts = np.maximum(1, np.floor(weights / weights.sum() * rest)).astype(int)
    while counts.sum() > rest:
        counts[np.argmax(counts)] -= 1
    while counts.sum() < rest:
        counts[np.argmin(counts)] += 1
    return [p["large_tenant"], p["small_tenant"], *counts.tolist()]


def _seed(db, master_key: str, p: dict, timings: dict[str, float]) -> tuple[str, str, str]:
    from pgvector.psycopg import register_vector
    from psycopg.rows import dict_row

    from sessionvault.core import crypto, records
    from sessionvault.core.keys import WrappedKey
    from sessionvault.db.pool import Database
    from sessionvault.runtime import key_provider
    from sessionvault.service import accounts

    from .common import make_settings

    rng = np.random.default_rng(p["seed"])
    rnd = random.Random(p["seed"])
    counts = _counts(rng, p)
    provider = key_provider(make_settings(db.app_url, master_key, "seed-salt-0123456789"))

    t = time.perf_counter()
    admin = Database(db.admin_url, max_size=2)
    try:
        user_ids = [accounts.create_user(admin, provider, f"bench-scaled-{i:05d}") for i in range(p["users"])]
    finally:
        admin.close()
    with psycopg.connect(db.owner_url, row_factory=dict_row) as conn:
        rows = conn.execute("SELECT id::text AS id, dek_wrapped, key_id FROM users").fetchall()
    deks = {r["id"]: provider.unwrap(r["id"], WrappedKey.from_row(r)) for r in rows}
    timings["users_s"] = time.perf_counter() - t
    print(f"   scaled seed: {len(user_ids):,} users with data keys in {timings['users_s']:.1f} s")

    dims = p["dims"]
    areas = _unit(rng.standard_normal((p["areas"], dims)))
    noise = _unit(rng.standard_normal((p["topics"], dims)))
    topics = _unit(areas[np.arange(p["topics"]) % p["areas"]] + p["topic_noise"] * noise)
    now = datetime.datetime.now(datetime.UTC)
    t = time.perf_counter()
    copy_s = 0.0
    with psycopg.connect(db.owner_url) as conn:
        register_vector(conn)
        hnsw = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
            " AND tablename = 'sessions' AND indexdef ILIKE '%USING hnsw%'"
        ).fetchall()
        for name, _ in hnsw:
            conn.execute(f'DROP INDEX "{name}"')
        conn.commit()
        sessions_rows: list[tuple] = []
        version_rows: list[tuple] = []

        def flush() -> float:
            started = time.perf_counter()
            _copy(conn, sessions_rows, version_rows)
            conn.commit()
            sessions_rows.clear()
            version_rows.clear()
            return time.perf_counter() - started

        for user_id, count in zip(user_ids, counts, strict=True):
            own = rng.choice(p["topics"], size=int(np.clip(count // 8, 3, 500)), replace=False)
            chosen = rng.choice(own, size=count)
            vectors = _unit(topics[chosen] + p["session_noise"] * _unit(rng.standard_normal((count, dims))))
            repos = [f"github.com/org{user_id[:6]}/app{j}" for j in range(1 + min(7, count // 15))]
            owner = uuid.UUID(user_id)
            for i in range(count):
                session_id = uuid.UUID(int=rnd.getrandbits(128), version=4)
                topic = int(chosen[i])
                thing, verb = THINGS[topic % len(THINGS)], VERBS[(topic // len(THINGS)) % len(VERBS)]
                name = f"{verb.split()[0]}-{thing.replace(' ', '-').lower()}-{i}"
                repo, client = repos[rnd.randrange(len(repos))], rnd.choice(CLIENTS)
                summary = (
                    f"{verb} the {thing} in {rnd.choice(PLACES)} because {rnd.choice(WHY)} (topic {topic})"
                )
                at = now - datetime.timedelta(seconds=rnd.uniform(60, 180 * 86400))
                record = _record(rnd, name, repo, client, summary)
                record["saved_at"] = at.isoformat(timespec="seconds")
                aad = crypto.session_aad(user_id, str(session_id), name, 1)
                nonce, ciphertext = crypto.seal(deks[user_id], json.dumps(record).encode(), aad)
                sessions_rows.append(
                    (
                        session_id,
                        owner,
                        name,
                        repo,
                        records.preview(summary),
                        client,
                        1,
                        vectors[i],
                        MODEL,
                        at,
                        at,
                    )
                )
                version_rows.append((session_id, owner, 1, nonce, ciphertext, client, at))
                if len(sessions_rows) >= CHUNK:
                    copy_s += flush()
        if sessions_rows:
            copy_s += flush()
        timings["generate_seal_copy_s"] = time.perf_counter() - t
        timings["copy_s"] = copy_s
        print(
            f"   scaled seed: {p['sessions']:,} records generated, sealed and COPYed in"
            f" {timings['generate_seal_copy_s']:.1f} s (COPY {copy_s:.1f} s of it)"
        )
        t = time.perf_counter()
        # The graph is built in memory while it fits (pgvector warns and slows down once it
        # does not): 384 floats plus the graph's links come to ~3 KB a row, so 1 GB covers
        # 300,000 rows and a million want ~4 GB (this machine has 24 GiB).
        memory_mb = max(1024, p["sessions"] * 4 // 1024)  # type: ignore[operator]
        conn.execute(f"SET maintenance_work_mem = '{memory_mb}MB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        for _, definition in hnsw:
            conn.execute(definition)
        conn.commit()
        timings["hnsw_build_s"] = time.perf_counter() - t
        print(f"   scaled seed: {len(hnsw)} HNSW index(es) rebuilt in {timings['hnsw_build_s']:.1f} s")
    t = time.perf_counter()
    with psycopg.connect(db.owner_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE sessions")
        conn.execute("VACUUM ANALYZE session_versions")
        conn.execute("CHECKPOINT")
    timings["vacuum_analyze_s"] = time.perf_counter() - t
    ordered = sorted(zip(counts[2:], user_ids[2:], strict=True))
    return user_ids[0], user_ids[1], ordered[len(ordered) // 2][1]


def _copy(conn: psycopg.Connection, sessions_rows: list[tuple], version_rows: list[tuple]) -> None:
    with conn.cursor().copy(
        "COPY sessions (id, user_id, name, repo, preview, client, version, embedding, embedding_model,"
        " created_at, updated_at) FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.set_types(
            [
                *("uuid", "uuid", "text", "text", "text", "text", "int4", "vector", "text"),
                "timestamptz",
                "timestamptz",
            ]
        )
        for row in sessions_rows:
            copy.write_row(row)
    with conn.cursor().copy(
        "COPY session_versions (session_id, user_id, version, nonce, ciphertext, client, saved_at)"
        " FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["uuid", "uuid", "int4", "bytea", "bytea", "text", "timestamptz"])
        for row in version_rows:
            copy.write_row(row)
