"""The HTTP path against the in-process call (issue 29, item 3): `load_session` over one
kept-alive connection to `sessionvault serve` (benchmarks/steady.py's `own_server`), against
`Vault.load`, the service call the tool handler makes, in one interleaved run.

    .venv/bin/python -m benchmarks.run --only httppath
    .venv/bin/python -m benchmarks.httppath_profile [profile|layers] [n]   (where the time goes)

Four ways, one after the other for each sample, so the machine's load (shared, 2 cores)
weighs on all four alike:
HTTP    stdlib http.client on one kept-alive connection to the server process;
ASGI    the same request through `SessionVaultApp` in this process (no socket, no uvicorn):
        the difference to HTTP is the server's HTTP stack and the client, the difference to
        Ride is ours and the MCP SDK's (edge checks, the SDK's protocol handling, the worker
        thread the tool runs in, the log line);
Ride    the same load with its admission riding on its transaction (`Admitter.ride`: the key,
        the rate-limit window and the audit row in the same flight), as the server runs it:
        the floor of the HTTP path with the admission the server must do;
Vault   `rt.vault.load(principal, args)` in this process: no HTTP, no admission, no audit.
Target: HTTP p50 <= 2x Vault p50."""

from __future__ import annotations

import asyncio
import dataclasses
import http.client
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg

from .common import RUN, load, ms, p50, p95, section
from .steady import Served, headers, own_server, post, rpc

NAME = "bench-httppath"
SESSION = {
    "name": NAME,
    "repo": "github.com/bench/httppath",
    "summary": "Split checkout into services; the payment intents come next, then the refund flow",
    "plan": [f"step {k}: extract the {k}th service" for k in range(6)],
    "decisions": [{"decision": "use Stripe intents", "reason": "SCA compliance"}],
    "todos": ["write payment tests", "move the webhook retries"],
    "files": ["checkout/api.py", "payments/intents.py"],
}


class InProcess:
    """The server's app, the Vault and the principal in this process, on the server's database."""

    def __init__(self, served: Served) -> None:
        from sessionvault.core import records
        from sessionvault.runtime import open_runtime
        from sessionvault.server.app import SessionVaultApp

        from .workload import principal

        settings = dataclasses.replace(served.settings, embeddings="none")  # a load embeds nothing
        self.rt = open_runtime(settings, pool_size=2)
        self.app = SessionVaultApp(self.rt)
        self.admitter = self.app.admitter  # a separate one would do as well: same state, same SQL
        self.authorization = f"Bearer {served.keys[0]}"
        self.base = served.url.removesuffix("/mcp")
        self.who = principal(served.db.owner_url, served.users[0])
        self.args = records.parse(records.LoadArgs, {"name": NAME})
        where = urlsplit(served.url)
        self.body = rpc("load_session", {"name": NAME})
        sent = {**headers(served.keys[0]), "Host": where.netloc, "Content-Length": str(len(self.body))}
        self.scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": where.path,
            "raw_path": where.path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(k.lower().encode(), v.encode()) for k, v in sent.items()],
            "client": ("127.0.0.1", 50000),
            "server": (where.hostname, where.port),
        }

    def vault(self) -> None:
        self.rt.vault.load(self.who, self.args)

    def ride(self) -> None:
        """The load with its admission riding on its transaction (key, rate-limit window, audit
        row: the server's one flight), as the server runs it after its HTTP and MCP layers."""
        from sessionvault.telemetry import RequestLog

        log = RequestLog(request_id="bench", ip="127.0.0.1", user_agent="bench")
        call = self.admitter.ride(self.authorization, "read", log, self.base)
        if call is None:  # not admitted lately: admit once, then every later call rides
            self.admitter.admit(self.authorization, "tool", log, self.base)
            return self.ride()
        self.rt.vault.load(call.principal, self.args)  # its Principal carries the ride
        if not self.admitter.settle(call, log, self.base):
            raise RuntimeError("the ride was stale")
        return None

    async def asgi(self) -> None:
        """One request through the app. Awaited inside one long-lived task (`_in_loop`), as
        uvicorn's are: anyio keeps its worker threads for the life of the loop's root task, so
        a loop run per request would start a new thread for every request."""
        sent = False
        status, body = 0, bytearray()

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await asyncio.Event().wait()  # uvicorn's receive also waits here for a disconnect
            sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))

        await self.app(self.scope, receive, send)
        if status != 200 or json.loads(body)["result"].get("isError"):
            raise RuntimeError(f"ASGI {status}: {bytes(body[:200])!r}")

    def close(self) -> None:
        self.rt.db.close()


def _in_loop(work: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(work())


def http_path(n: int = 300, warmup: int = 20) -> None:
    section(
        "The HTTP path against the in-process call (issue 29, item 3): load_session by name",
        f"{RUN} --only httppath",
        f"n={n} each way after {warmup} warm-ups, interleaved sample by sample: HTTP (one kept-alive",
        "connection to `sessionvault serve`), ASGI (SessionVaultApp in this process, no socket),",
        "Ride (the same load with the admission riding on its transaction, as the server runs it: key,",
        "rate-limit window and audit row in the one flight), Vault (rt.vault.load in this process: the",
        "service call the tool makes). Target: HTTP <= 2x Vault.",
        "server CPU: the server process's CPU time (user + system) per HTTP request over the run;",
        "WAL flushes: the database's WAL fsyncs (pg_stat_io) per round of the four ways (its WAL",
        "writer's own every 200 ms included; a server connection reports them at most once a second, so",
        "a lower bound): a commit that waits for its flush shows as about one per call.",
        f"load average at start: {load()}",
    )
    with own_server() as served:
        where = urlsplit(served.url)
        conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port or 80, timeout=30)
        post(conn, where.path, rpc("save_session", SESSION), served.keys[0])
        here = InProcess(served)
        load_body = rpc("load_session", {"name": NAME})
        try:
            flushes = -_wal_fsyncs(served.db.owner_url)
            samples, cpu = _interleaved(
                here, lambda: post(conn, where.path, load_body, served.keys[0]), served.pid, n, warmup
            )
            flushes += _wal_fsyncs(served.db.owner_url)
        finally:
            here.close()
            conn.close()
    vault = p50(samples["Vault"])
    print(f"   {'way':6} {'p50':>10} {'p95':>10}  {'/ Vault p50':>11}")
    for way, taken in samples.items():
        print(f"   {way:6} {ms(p50(taken))} ms {ms(p95(taken))} ms  {p50(taken) / vault:10.2f}x")
    per_round = flushes / (n + warmup)
    print(f"   server CPU per HTTP request: {ms(cpu).strip()} ms; WAL flushes per round: {per_round:.2f}")
    ratio = p50(samples["HTTP"]) / vault
    print(f"   HTTP / Vault: {ratio:.2f}x (target <= 2x); load average now {load()}")


def _wal_fsyncs(owner_url: str) -> int:
    """The database's WAL fsyncs so far (PostgreSQL 18: pg_stat_io, object 'wal')."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")  # this backend's own counts, now
        row = conn.execute("SELECT coalesce(sum(fsyncs), 0) FROM pg_stat_io WHERE object = 'wal'").fetchone()
    return int(row[0]) if row else 0


def _interleaved(
    here: InProcess, over_http: Callable[[], object], pid: int, n: int, warmup: int
) -> tuple[dict[str, list[float]], float]:
    """Samples of the three ways, one of each in turn; and the server's CPU per HTTP request."""
    samples: dict[str, list[float]] = {"HTTP": [], "ASGI": [], "Ride": [], "Vault": []}
    used = 0.0

    async def interleaved() -> None:
        nonlocal used
        for i in range(n + warmup):
            if i == warmup:
                used = -_cpu_seconds(pid)
            for way, taken in samples.items():
                started = time.perf_counter()
                if way == "HTTP":
                    over_http()
                elif way == "ASGI":
                    await here.asgi()
                elif way == "Ride":
                    here.ride()
                else:
                    here.vault()
                if i >= warmup:
                    taken.append(time.perf_counter() - started)
        used += _cpu_seconds(pid)

    _in_loop(interleaved)
    return samples, used / n


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    http_path()
