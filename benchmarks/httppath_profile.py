"""Where a `load_session` over /mcp spends what the Vault call does not (issue 29, item 3): the
diagnostics behind benchmarks/httppath.py, on the same served database and in-process app.

    .venv/bin/python -m benchmarks.httppath_profile profile [n]   cProfile of n in-process requests
    .venv/bin/python -m benchmarks.httppath_profile layers [n]    CPU and wall, layer by layer

profile  the top functions by own time and the own time summed by package (wall clock: the
         time the event loop's thread waits for the worker thread shows as `poll`);
layers   CPU time (this process, every thread) and wall time per request through the app as
         served, then with one layer after another replaced: the admission (the request runs as
         its principal at once), the load (a stub answering the same dict), the worker thread
         (the stub called inline). What is left at the end is our HTTP and MCP layers and the
         SDK's protocol handling alone; the rows in between price each layer. CPU time is
         steadier than wall time on a busy machine, but a machine under load inflates both."""

from __future__ import annotations

import contextlib
import cProfile
import dataclasses
import http.client
import os
import pstats
import sys
import time
from collections.abc import Callable
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import anyio.to_thread

from .httppath import SESSION, InProcess, _in_loop
from .steady import own_server, post, rpc


@contextlib.contextmanager
def _served() -> Any:
    with own_server() as served:
        where = urlsplit(served.url)
        conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port or 80, timeout=30)
        post(conn, where.path, rpc("save_session", SESSION), served.keys[0])
        conn.close()
        here = InProcess(served)
        try:
            yield here
        finally:
            here.close()


def profile(n: int = 500, top: int = 25) -> None:
    profiler = cProfile.Profile()
    took = 0.0
    with _served() as here:

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

        _in_loop(profiled)
    stats = pstats.Stats(profiler)
    calls = sum(nc for (_, nc, _, _, _) in stats.stats.values())  # type: ignore[attr-defined]
    print(f"{n} in-process ASGI requests under cProfile: {took / n * 1000:.2f} ms each (profiled),")
    print(f"{calls / n:.0f} function calls each")
    by_package: dict[str, float] = {}
    for (file, _, _), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        by_package[_package(file)] = by_package.get(_package(file), 0.0) + own
    total = sum(by_package.values())
    print("own time by package (ms per request, share):")
    for package, own in sorted(by_package.items(), key=lambda kv: -kv[1])[:15]:
        print(f"   {package:28} {own / n * 1000:6.3f} ms  {own / total:5.1%}")
    stats.sort_stats("tottime").print_stats(top)


def _package(file: str) -> str:
    """The top-level package of a source file (site-packages or ours), else its kind."""
    for marker in ("site-packages/", "shared/"):
        if marker in file:
            parts = file.split(marker, 1)[1].split("/")
            return "/".join(parts[:2]) if parts[0] in ("mcp", "sessionvault") else parts[0]
    if file.startswith("~") or file.startswith("<"):
        return "builtins"
    return "stdlib" if "/lib/python3" in file else os.path.basename(file)


def layers(n: int = 500, rounds: int = 3) -> None:
    from sessionvault.server.mcp import endpoint, tools

    with _served() as here:
        answer = here.rt.vault.load(here.who, here.args)

        async def no_admission(*args: Any) -> None:  # ride_or_admit's place: run as the principal
            run, send, log = args[4], args[5], args[6]
            log.admitted = True
            await run(here.who, send)

        async def inline(fn: Callable[..., Any], *args: Any, **_: Any) -> Any:
            return fn(*args)

        stub = dataclasses.replace(tools._BY_NAME["load_session"], run=lambda vault, who, args: answer)
        no_ride = mock.patch.object(endpoint.riding, "ride_or_admit", no_admission)
        stubbed = mock.patch.dict(tools._BY_NAME, {"load_session": stub})
        threadless = mock.patch.object(anyio.to_thread, "run_sync", inline)
        steps: list[tuple[str, list[Any]]] = [  # each step adds its patches to the ones before
            ("the app as served", []),
            ("no admission (the load in a thread)", [no_ride]),
            ("no admission, a stub load (a thread)", [stubbed]),
            ("no admission, a stub load, no thread", [threadless]),
        ]
        rows: dict[str, list[tuple[float, float]]] = {}

        async def measured() -> None:
            for label, fn in (("Vault (rt.vault.load)", here.vault), ("Ride (+ its admission)", here.ride)):
                for _ in range(rounds):
                    rows.setdefault(label, []).append(_per_call(fn, n))
            with contextlib.ExitStack() as patches:
                for label, patching in steps:
                    for patch in patching:
                        patches.enter_context(patch)
                    for _ in range(30):
                        await here.asgi()
                    for _ in range(rounds):
                        cpu, wall = time.process_time(), time.perf_counter()
                        for _ in range(n):
                            await here.asgi()
                        rows.setdefault(label, []).append(
                            ((time.process_time() - cpu) / n, (time.perf_counter() - wall) / n)
                        )

        _in_loop(measured)
    print(f"per request, median of {rounds} runs of {n} (load average {os.getloadavg()[0]:.2f}):")
    print(f"   {'':40} {'CPU':>9} {'wall':>9}")
    for label, runs in rows.items():
        cpu = sorted(c for c, _ in runs)[len(runs) // 2]
        wall = sorted(w for _, w in runs)[len(runs) // 2]
        print(f"   {label:40} {cpu * 1000:6.3f} ms {wall * 1000:6.3f} ms")


def _per_call(fn: Callable[[], object], n: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(n):
        fn()
    return (time.process_time() - cpu) / n, (time.perf_counter() - wall) / n


if __name__ == "__main__":
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    if sys.argv[1:2] == ["layers"]:
        layers(count)
    else:
        profile(count)
