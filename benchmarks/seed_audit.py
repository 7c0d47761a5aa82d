"""The audit trail that benchmarks/partitions.py prunes: `rows` audit rows in one UTC day
partition for each of the `days` days before today, in an embedded PostgreSQL of its own cached
in <bench cache>/partitions-<rows>-<days> (seed.py's cache folder), reused while the migrations
are unchanged. 1,000 users; every column an admission writes, ip and user-agent hashes included.
Each day is made with generate_series in a table of its own and then attached, so its indexes
are built once, not row by row. A run consumes two days (one dropped, one emptied): the next
run loads those two again, not the whole table."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from .seed import cache_home, migrations

USERS = 1_000
TOOLS = ("load_session", "save_session", "search_sessions", "list_sessions", "tools/list")


@dataclass
class Bench:
    home: Path
    db: Any  # sessionvault.local.host.embedded.Embedded
    meta: dict[str, Any]
    loaded_s: float = 0.0  # seeding done by this run
    loaded_rows: int = 0


def day_start(days_ago: int) -> datetime:
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=days_ago)


def partition_name(day: datetime) -> str:
    return f"audit_events_p{day:%Y%m%d}"


def open_bench(rows: int, days: int, fresh: bool) -> Bench:
    """The cached database, rebuilt when the parameters or migrations changed, topped up to
    `days` full day partitions before today."""
    from sessionvault.local.host import embedded

    home = cache_home() / f"partitions-{rows}-{days}"
    key = {"format": 1, "rows": rows, "days": days, "migrations": migrations()}
    meta_file = home / "bench-partitions.json"
    meta = json.loads(meta_file.read_text()) if meta_file.exists() and not fresh else {}
    if meta.get("key") != key:
        if home.exists():
            with contextlib.suppress(Exception):
                embedded.stop(home)
            shutil.rmtree(home)
        meta = {"key": key, "intact": []}
    bench = Bench(home, embedded.start(home), meta)
    if "user_id" not in meta:
        _make_user(bench)
    _top_up(bench, rows // days, days)
    meta_file.write_text(json.dumps(bench.meta, indent=1))
    meta_file.chmod(0o600)  # the bench user's key
    return bench


def _make_user(bench: Bench) -> None:
    from sessionvault.db.pool import Database
    from sessionvault.runtime import key_provider
    from sessionvault.service import accounts

    from .common import make_settings

    master_key, salt = base64.b64encode(os.urandom(32)).decode(), secrets.token_urlsafe(24)
    admin = Database(bench.db.admin_url, max_size=1)
    try:
        provider = key_provider(make_settings(bench.db.app_url, master_key, salt))
        user = accounts.create_user(admin, provider, "bench-partitions")
        key = accounts.create_key(admin, user, "bench", ("read", "write", "delete"))[0]
    finally:
        admin.close()
    bench.meta.update(master_key=master_key, audit_salt=salt, user_id=user, api_key=key)


LOAD_SQL = """
INSERT INTO {table} (id, user_id, at, request_id, tool, outcome, error_class, latency_ms, ip_hash, ua_hash)
SELECT %(base)s + g,
       ('00000000-0000-4000-8000-' || lpad((g %% %(users)s)::text, 12, '0'))::uuid,
       %(lo)s + (g::bigint * %(step)s) * interval '1 microsecond',
       md5(g::text),
       (%(tools)s::text[])[1 + g %% 5],
       CASE WHEN g %% 50 = 0 THEN 'error' ELSE 'ok' END,
       CASE WHEN g %% 50 = 0 THEN 'validation' END,
       CASE WHEN g %% 50 = 0 THEN 3 + g %% 40 END,
       sha256(int4send((g %% 20000)::int4)),
       sha256(int4send((g %% 37)::int4))
FROM generate_series(0, %(n)s - 1) AS g
"""


def _top_up(bench: Bench, per_day: int, days: int) -> None:
    """Every day 1..days before today a full partition; days older than that dropped."""
    wanted = {partition_name(day_start(d)): day_start(d) for d in range(1, days + 1)}
    intact = [n for n in bench.meta["intact"] if n in wanted]
    started = time.perf_counter()
    with psycopg.connect(bench.db.owner_url, autocommit=True) as conn:
        old = conn.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relname ~ '^audit_events_p[0-9]{8}$'"
            " AND c.relname < %s ORDER BY 1",
            (min(wanted),),
        ).fetchall()
        for (name,) in old:
            conn.execute(f"DROP TABLE {name}")
        for name, lo in sorted(wanted.items()):
            if name in intact:
                continue
            conn.execute(f"DROP TABLE IF EXISTS {name}")
            print(f"   loading {per_day:,} audit rows for {lo:%Y-%m-%d} ...", flush=True)
            (base,) = conn.execute(
                "SELECT setval(pg_get_serial_sequence('audit_events', 'id'),"
                " nextval(pg_get_serial_sequence('audit_events', 'id')) + %s)",
                (per_day,),
            ).fetchone()  # type: ignore[misc]
            conn.execute(f"CREATE TABLE {name} (LIKE audit_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
            step = 86_400_000_000 // per_day
            params = {"base": base - per_day, "users": USERS, "lo": lo, "step": step, "n": per_day,
                      "tools": list(TOOLS)}  # fmt: skip
            conn.execute(LOAD_SQL.format(table=name), params)
            bounds = sql.SQL("ALTER TABLE audit_events ATTACH PARTITION {} FOR VALUES FROM ({}) TO ({})")
            conn.execute(
                bounds.format(sql.Identifier(name), sql.Literal(lo), sql.Literal(lo + timedelta(days=1)))
            )
            conn.execute(f"VACUUM ANALYZE {name}")
            intact.append(name)
            bench.loaded_rows += per_day
    bench.meta["intact"] = sorted(intact)
    bench.loaded_s = time.perf_counter() - started


# --- the serving path while it runs ---------------------------------------------------------
