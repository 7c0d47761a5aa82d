"""Pruning the audit trail at 10 million rows (issue 29 item 7): the prune's time, and the
serving path's latency while it runs, against the DELETE the prune used to be.

    .venv/bin/python -m benchmarks.run --only partitions   (10,000,000 rows over 10 days)
    .venv/bin/python -m benchmarks.partitions              (the same)
    .venv/bin/python -m benchmarks.partitions --rows 2000000 --days 4 --fresh

The data: 10 million audit rows in day partitions, cached (benchmarks/seed_audit.py).

The run: `sessionvault serve` (benchmarks/serve.py) answers load_session over one kept-alive
connection, back to back, from a thread. Four windows of those calls:
  idle     5 s with nothing else running;
  prune    the maintenance task's work for audit_events, as the maintenance role: partitions
           made ahead, the oldest day (past a retention of days - 1) detached, then dropped;
  DELETE   the old prune's statement over the next oldest day's rows (as one statement by the
           owner: the old task ran one per user, under row security);
  VACUUM   what that DELETE leaves to autovacuum: the day's table read and its indexes cleaned
           (run at once and unthrottled here; autovacuum spreads it out, at the same total cost).
The prune drops one day and the DELETE empties another: the next run loads those two again
(rows / days * 2 rows), not the whole table."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import threading
import time
import warnings
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

from .common import RUN, ms, p50, p95, section
from .seed_audit import LOAD_SQL, TOOLS, USERS, Bench, day_start, open_bench, partition_name

COMMAND = ".venv/bin/python -m benchmarks.partitions"


@dataclass
class Caller:
    """load_session back to back over one kept-alive connection; each call's start and end."""

    url: str
    key: str
    calls: list[tuple[float, float]] = field(default_factory=list)
    errors: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def body(self, tool: str, arguments: dict[str, object]) -> bytes:
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        return json.dumps(call).encode()

    def post(self, conn: http.client.HTTPConnection, body: bytes) -> None:
        headers = {
            "Authorization": f"Bearer {self.key}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        }
        conn.request("POST", urlsplit(self.url).path, body=body, headers=headers)
        reply = conn.getresponse()
        data = reply.read()
        if reply.status != 200 or json.loads(data)["result"].get("isError"):
            raise RuntimeError(f"HTTP {reply.status}: {data[:200]!r}")

    def connect(self) -> http.client.HTTPConnection:
        where = urlsplit(self.url)
        return http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port or 80, timeout=60)

    def run(self) -> None:
        conn = self.connect()
        body = self.body("load_session", {"name": "bench-partitions"})
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                self.post(conn, body)
            except Exception:
                self.errors += 1
                conn.close()
                conn = self.connect()
                continue
            self.calls.append((started, time.perf_counter()))
        conn.close()

    def during(self, start: float, end: float) -> list[float]:
        """Durations of the calls that overlapped [start, end]."""
        return [b - a for a, b in list(self.calls) if b >= start and a <= end]


def measure(bench: Bench, idle_s: float = 5.0) -> None:
    from sessionvault.db import partitions
    from sessionvault.db.pool import Database

    from .workload import ServerProcess

    meta, days = bench.meta, bench.meta["key"]["days"]
    with ServerProcess(bench.db.app_url, meta["master_key"], meta["audit_salt"]) as server:
        caller = Caller(server.url, meta["api_key"])
        warm = caller.connect()
        caller.post(
            warm, caller.body("save_session", {"name": "bench-partitions", "summary": "the audit trail"})
        )
        for _ in range(20):
            caller.post(warm, caller.body("load_session", {"name": "bench-partitions"}))
        warm.close()
        thread = threading.Thread(target=caller.run, daemon=True)
        thread.start()
        windows: dict[str, tuple[float, float]] = {}
        try:
            start = time.perf_counter()
            time.sleep(idle_s)
            windows["idle"] = (start, time.perf_counter())

            maint = Database(bench.db.maint_url, max_size=1)
            try:
                start = time.perf_counter()
                pruned = partitions.prune(maint, "audit_events", timedelta(days=days - 1))
                detached = time.perf_counter()
                dropped = partitions.drop_detached(maint)
                windows["prune"] = (start, time.perf_counter())
            finally:
                maint.close()
            gone = partition_name(day_start(days))
            bench.meta["intact"] = [n for n in bench.meta["intact"] if n != gone]
            time.sleep(1.0)

            emptied = partition_name(day_start(days - 1))
            bench.meta["intact"] = [n for n in bench.meta["intact"] if n != emptied]
            with psycopg.connect(bench.db.owner_url, autocommit=True) as conn:
                start = time.perf_counter()
                cut = day_start(days - 2)
                deleted = conn.execute("DELETE FROM audit_events WHERE at < %s", (cut,)).rowcount
                windows["DELETE"] = (start, time.perf_counter())
                time.sleep(1.0)
                # What the DELETE leaves for later: autovacuum must then read the day's table and
                # clean every index of it (run here at once, unthrottled, to see its cost).
                start = time.perf_counter()
                conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(emptied)))
                windows["VACUUM"] = (start, time.perf_counter())
            time.sleep(1.0)
        finally:
            caller.stop.set()
            thread.join(timeout=60)
            meta_file = bench.home / "bench-partitions.json"
            meta_file.write_text(json.dumps(bench.meta, indent=1))

    prune_s = windows["prune"][1] - windows["prune"][0]
    print(
        f"   prune (audit_events, as the maintenance role): {prune_s * 1000:.0f} ms in all:"
        f" made ahead + detached {(detached - windows['prune'][0]) * 1000:.0f} ms"
        f" ({pruned.created} made, {pruned.detached} detached, ~{pruned.detached_rows:,} rows,"
        f" {pruned.busy} busy), dropped {(windows['prune'][1] - detached) * 1000:.0f} ms ({dropped} table)"
    )
    delete_s = windows["DELETE"][1] - windows["DELETE"][0]
    vacuum_s = windows["VACUUM"][1] - windows["VACUUM"][0]
    print(
        f"   the old prune's DELETE over the next day: {deleted:,} rows in {delete_s:.1f} s,"
        f" then the VACUUM that must follow it: {vacuum_s:.1f} s"
    )
    print(f"   load_session over HTTP (keep-alive), calls overlapping each window; errors: {caller.errors}")
    print(f"   {'window':8} {'length':>9} {'calls':>6} {'p50':>9} {'p95':>9} {'max':>9}")
    for label, (start, end) in windows.items():
        took = caller.during(start, end)
        if not took:
            print(f"   {label:8} {(end - start) * 1000:7.0f} ms {0:6d}")
            continue
        print(
            f"   {label:8} {(end - start) * 1000:7.0f} ms {len(took):6d} {ms(p50(took))} ms"
            f" {ms(p95(took))} ms {ms(max(took))} ms"
        )


def prune_figures(rows: int = 10_000_000, days: int = 10, fresh: bool = False, convert: int = 0) -> None:
    section(
        f"Pruning the audit trail at {rows:,} rows ({days} day partitions of {rows // days:,})",
        f"{RUN} --only partitions"
        if (rows, days) == (10_000_000, 10)
        else f"{COMMAND} --rows {rows} --days {days}",
        "prune: partitions made ahead, the oldest day detached and dropped, as the maintenance task does;",
        "DELETE: the old prune's statement over the next day's rows; VACUUM: the work it leaves behind.",
        "load_session back to back over one kept-alive connection meanwhile (benchmarks/serve.py).",
    )
    bench = open_bench(rows, days, fresh)
    try:
        with psycopg.connect(bench.db.owner_url) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
            (count,) = conn.execute(
                "SELECT sum(reltuples)::bigint FROM pg_class WHERE relname ~ '^audit_events_p[0-9]{8}$'"
            ).fetchone()  # type: ignore[misc]
            (size,) = conn.execute(
                "SELECT pg_size_pretty(pg_total_relation_size(%s::regclass))", (partition_name(day_start(1)),)
            ).fetchone()  # type: ignore[misc]
        how = (
            f"loaded {bench.loaded_rows:,} rows in {bench.loaded_s:.0f} s"
            if bench.loaded_rows
            else "all reused"
        )
        print(f"   PostgreSQL {version} (embedded); audit_events ~{count:,} rows, a day's partition {size};")
        print(f"   cache {bench.home}: {how}")
        measure(bench)
        if convert:
            conversion(bench, convert)
    finally:
        # The embedded server is stopped when this process exits (pgserver's cleanup_mode "stop");
        # stopping it here as well makes that cleanup fail noisily.
        pass


def conversion(bench: Bench, rows: int) -> None:
    """Migration 0017 over an audit_events of `rows` rows (a new database beside the cached
    one, migrated to the version before it, the rows spread over 30 days): how long the
    conversion holds the tables, and that every row is there after it."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from sessionvault.db.migrations import migrate, migration_files, migrations_dir, version_of

    versions = [version_of(f) for f in migration_files(migrations_dir())]
    mine = next(v for v in versions if v.endswith("_partitions"))
    name = f"sv_convert_{secrets.token_hex(3)}"
    server = make_conninfo("", **{**conninfo_to_dict(bench.db.owner_url), "dbname": "postgres"})
    url = make_conninfo("", **{**conninfo_to_dict(bench.db.owner_url), "dbname": name})
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        migrate(url, through=versions[versions.index(mine) - 1])
        with psycopg.connect(url, autocommit=True) as conn:
            step = 30 * 86_400_000_000 // rows
            params = {
                "base": 0,
                "users": USERS,
                "lo": day_start(30),
                "step": step,
                "n": rows,
                "tools": list(TOOLS),
            }
            unnumbered = LOAD_SQL.replace("(id, ", "(").replace("%(base)s + g,", "")  # the identity numbers
            conn.execute(unnumbered.format(table="audit_events"), params)
        started = time.perf_counter()
        migrate(url)
        took = time.perf_counter() - started
        with psycopg.connect(url) as conn:
            (after,) = conn.execute("SELECT count(*) FROM audit_events").fetchone()  # type: ignore[misc]
            (parts,) = conn.execute(
                "SELECT count(*) FROM pg_inherits WHERE inhparent = 'audit_events'::regclass"
            ).fetchone()  # type: ignore[misc]
        print(
            f"   migration {mine} over {rows:,} audit rows (30 days): {took:.1f} s, the tables locked"
            f" meanwhile; {after:,} rows after ({'all' if after == rows else 'NOT all'}), {parts} partitions"
        )
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.partitions")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--fresh", action="store_true", help="rebuild the cached database")
    parser.add_argument("--convert", type=int, default=0, metavar="ROWS",
                        help="also time migration 0017 over an audit_events of ROWS rows")  # fmt: skip
    args = parser.parse_args()
    if args.days < 3:
        parser.error("--days must be at least 3 (one day to drop, one to DELETE, one kept)")
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TQDM_DISABLE", "1")
    prune_figures(args.rows, args.days, args.fresh, args.convert)


if __name__ == "__main__":
    main()
