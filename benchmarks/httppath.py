"""The HTTP path against the in-process call (issue 29, item 3): `load_session` over one
kept-alive connection to `sessionvault serve` (benchmarks/steady.py's `own_server`), against
`Vault.load`, the service call the tool handler makes, in one interleaved run.

    .venv/bin/python -m benchmarks.run --only httppath
    .venv/bin/python -m benchmarks.httppath profile [n]    (cProfile of the in-process app)

Three ways, one after the other for each sample, so the machine's load (shared, 2 cores)
weighs on all three alike:
HTTP    stdlib http.client on one kept-alive connection to the server process;
ASGI    the same request through `SessionVaultApp` in this process (no socket, no uvicorn):
        the difference to HTTP is the server's HTTP stack and the client, the difference to
        Vault is ours and the MCP SDK's (edge checks, admission riding on the call's
        transaction, the SDK's protocol handling, the log line);
Vault   `rt.vault.load(principal, args)` in this process: no HTTP, no admission, no audit.
Target: HTTP p50 <= 2x Vault p50."""

from __future__ import annotations

import asyncio
import cProfile
import dataclasses
import http.client
import json
import os
import pstats
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

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
        "Vault (rt.vault.load in this process: the service call the tool makes). Target: HTTP <= 2x Vault.",
        f"load average at start: {load()}",
    )
    with own_server() as served:
        where = urlsplit(served.url)
        conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port or 80, timeout=30)
        key = served.keys[0]
        post(conn, where.path, rpc("save_session", SESSION), key)
        here = InProcess(served)
        try:
            load_body = rpc("load_session", {"name": NAME})
            ways: dict[str, Callable[[], object]] = {
                "HTTP": lambda: post(conn, where.path, load_body, key),
                "ASGI": lambda: None,  # awaited below
                "Vault": here.vault,
            }
            samples: dict[str, list[float]] = {way: [] for way in ways}

            async def interleaved() -> None:
                for i in range(n + warmup):
                    for way, call in ways.items():
                        started = time.perf_counter()
                        if way == "ASGI":
                            await here.asgi()
                        else:
                            call()
                        took = time.perf_counter() - started
                        if i >= warmup:
                            samples[way].append(took)

            _in_loop(interleaved)
        finally:
            here.close()
            conn.close()
    vault = p50(samples["Vault"])
    print(f"   {'way':6} {'p50':>10} {'p95':>10}  {'p50 / Vault p50':>15}")
    for way, taken in samples.items():
        print(f"   {way:6} {ms(p50(taken))} ms {ms(p95(taken))} ms  {p50(taken) / vault:14.2f}x")
    print(f"   HTTP / Vault: {p50(samples['HTTP']) / vault:.2f}x (target <= 2x); load average now {load()}")


def profile(n: int = 500, top: int = 25) -> None:
    """cProfile of `n` in-process ASGI requests (after warm-ups): where our app and the SDK spend
    the time the Vault call does not. Prints the top functions by own time, and the own time
    summed by package."""
    with own_server() as served:
        where = urlsplit(served.url)
        conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port or 80, timeout=30)
        post(conn, where.path, rpc("save_session", SESSION), served.keys[0])
        conn.close()
        here = InProcess(served)
        profiler = cProfile.Profile()
        took = 0.0

        async def profiled() -> None:
            nonlocal took
            for _ in range(30):
                await here.asgi()
            started = time.perf_counter()
            profiler.enable()
            for _ in range(n):
                await here.asgi()
            profiler.disable()
            took = time.perf_counter() - started

        try:
            _in_loop(profiled)
        finally:
            here.close()
    stats = pstats.Stats(profiler)
    print(f"{n} in-process ASGI requests under cProfile: {took / n * 1000:.2f} ms each (profiled)")
    by_package: dict[str, float] = {}
    for (file, _, _), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        by_package[_package(file)] = by_package.get(_package(file), 0.0) + own
    total = sum(by_package.values())
    print("own time by package (ms per request, share):")
    for package, own in sorted(by_package.items(), key=lambda kv: -kv[1])[:15]:
        print(f"   {package:28} {own / n * 1000:6.3f} ms  {own / total:5.1%}")
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def _package(file: str) -> str:
    """The top-level package of a source file (site-packages or ours), else its kind."""
    for marker in ("site-packages/", "shared/"):
        if marker in file:
            parts = file.split(marker, 1)[1].split("/")
            return "/".join(parts[:2]) if parts[0] in ("mcp", "sessionvault") else parts[0]
    if file.startswith("~") or file.startswith("<"):
        return "builtins"
    return "stdlib" if "/lib/python3" in file else os.path.basename(file)


if __name__ == "__main__":
    if sys.argv[1:2] == ["profile"]:
        profile(int(sys.argv[2]) if len(sys.argv) > 2 else 500)
    else:
        http_path()
