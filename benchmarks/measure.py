"""Round trips per call, latency per call (HTTP, Mangum, Vault), throughput over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
from dataclasses import dataclass
from typing import Any

import httpx2

from tests.support.pgproxy import PgProxy, proxied_url

from .common import RUN, make_settings, ms, p50, p95, section, timed
from .workload import (
    Call,
    CallFailed,
    HttpCaller,
    MangumCaller,
    ServerProcess,
    VaultCaller,
    check_reply,
    mcp_headers,
)

EMBEDS = ("save_session", "search_sessions")


@dataclass
class Context:
    """Everything a section needs: the seeded database and this run's users and keys."""

    owner_url: str
    app_url: str
    master_key: str
    audit_salt: str
    keys: dict[str, str]  # who -> API key
    principals: dict[str, Any]  # who -> Principal (for direct Vault calls)
    calls: list[Call]  # the round-trip set
    extra_calls: list[Call]  # latency only (the large tenant)
    crowd: list[tuple[str, str]]  # (key, session name) of 32 seeded users, for throughput


def _runtime(url: str, ctx: Context, **kwargs: Any):
    from sessionvault.runtime import open_runtime

    # allowed_hosts "*" as in Lambda: the Mangum events carry the API Gateway host
    return open_runtime(make_settings(url, ctx.master_key, ctx.audit_salt, allowed_hosts=("*",)), **kwargs)


def _warm(rt) -> None:
    with contextlib.suppress(AttributeError):  # the local model, before the first timed call
        rt.vault.embedder.embed("warm up")


# --- round trips -----------------------------------------------------------------------------


def round_trips(ctx: Context, n: int = 30, delay_ms: float = 3.0) -> None:
    section(
        "Database round trips per call (through the counting proxy)",
        f"{RUN} --only roundtrips",
        "flights: client->server bursts the proxy saw per call (the call and any work after its reply,",
        "  e.g. an audit write), median of 3; HTTP = server process, Mangum/Vault = in this process.",
        f"serial: (p50 with {delay_ms:g} ms added per round trip - p50 with 0) / the delay actually slept",
        f"  (~{delay_ms:g}.1 ms), over HTTP, n={n} per delay ({2 * n} for save/search, which embed),",
        "  interleaved, idle in between: the round trips the caller waits for. paired: the median of",
        "  the differences of neighbouring samples instead (steadier when the machine is busy).",
        "  *: the pool opened a connection during the call.",
    )
    with PgProxy(ctx.app_url) as proxy:
        url = proxied_url(ctx.app_url, proxy)
        rt = _runtime(url, ctx)
        lambda_rt = _runtime(url, ctx, pool_size=1)  # as functions/mcp/handler.py opens it
        with ServerProcess(url, ctx.master_key, ctx.audit_salt) as server:
            http = HttpCaller(server.url, ctx.keys)
            callers: dict[str, Any] = {
                "HTTP": http,
                "Mangum": MangumCaller(lambda_rt, ctx.keys),
                "Vault": VaultCaller(rt, ctx.principals),
            }
            _warm(rt)
            broken = set()
            # Connections opened, models loaded and each key admitted once (a warm instance's
            # tool calls ride on the tool's own transaction) before counting.
            for call in ctx.calls:
                try:
                    for warm in (http, callers["Mangum"]):
                        warm(call, -1)
                        warm(call, -2)
                except CallFailed as exc:
                    broken.add(call.label)
                    print(f"   {call.label}: failed, not measured: {exc}")
            print(
                f"   {'call':30} {'flights: HTTP':>13} {'Mangum':>7} {'Vault':>6}"
                f"   {'p50 +0 ms':>9} {f'p50 +{delay_ms:g} ms':>10}   {'serial':>6} {'paired':>6}"
            )
            for call in ctx.calls:
                if call.label in broken:
                    continue
                counts = {}
                for p, (path, caller) in enumerate(callers.items()):
                    if path == "Vault" and not caller.supports(call):
                        counts[path] = "-"
                        continue
                    counts[path] = _flights(proxy, caller, call, [100 + 10 * p + j for j in range(3)])
                by_delay: dict[float, list[float]] = {0.0: [], delay_ms: []}
                before = proxy.snapshot()
                # the embedding's jitter (a few ms) would swamp 3 ms steps: more samples there
                for i in range(n * 2 if call.tool in EMBEDS else n):
                    for d, delay in enumerate(by_delay):
                        proxy.delay_ms = delay
                        proxy.wait_idle()
                        started = time.perf_counter()
                        http(call, 1000 + 2 * i + d)
                        by_delay[delay].append(time.perf_counter() - started)
                proxy.delay_ms = 0.0
                slept = (proxy.snapshot() - before).mean_delay_s or delay_ms / 1000
                base, slow = p50(by_delay[0.0]), p50(by_delay[delay_ms])
                serial = (slow - base) / slept
                paired = p50([b - a for a, b in zip(*by_delay.values(), strict=True)]) / slept
                print(
                    f"   {call.label:30} {counts['HTTP']:>13} {counts['Mangum']:>7} {counts['Vault']:>6}"
                    f"   {ms(base)} ms {ms(slow)} ms   {serial:6.1f} {paired:6.1f}"
                )
            tools = http(ctx.calls[-2], 0).get("tools", [])
            text = json.dumps(tools)
            print(f"   tools/list: {len(tools)} tools, {len(text)} characters = ~{len(text) // 4} tokens")
            http.close()
        rt.close()
        lambda_rt.close()


def _flights(proxy: PgProxy, caller: Any, call: Call, indexes: list[int]) -> str:
    counts, opened = [], 0
    for i in indexes:
        proxy.wait_idle()
        before = proxy.snapshot()
        caller(call, i)
        proxy.wait_idle()
        delta = proxy.snapshot() - before
        counts.append(delta.flights)
        opened += delta.connections
    out = str(int(statistics.median(counts)))
    if min(counts) != max(counts):
        out = f"{min(counts)}-{max(counts)}"
    return out + ("*" if opened else "")


# --- latency ---------------------------------------------------------------------------------


def latency(ctx: Context, n: int = 30) -> None:
    section(
        "Latency per call: HTTP vs in-process",
        f"{RUN} --only latency",
        "HTTP: JSON-RPC POST to the server process over loopback (keep-alive), direct to PostgreSQL;",
        "Mangum: API Gateway v2 event through Mangum in this process (pool_size=1, as the Lambda);",
        "Vault: the Vault method alone, in this process (no HTTP, auth, rate limit or audit).",
        f"n={n} each, back to back after 2 warm-ups; save/search include the local embedding (~10-30 ms).",
    )
    rt = _runtime(ctx.app_url, ctx)
    lambda_rt = _runtime(ctx.app_url, ctx, pool_size=1)  # as functions/mcp/handler.py opens it
    _warm(rt)
    with ServerProcess(ctx.app_url, ctx.master_key, ctx.audit_salt) as server:
        paths: dict[str, Any] = {
            "HTTP": HttpCaller(server.url, ctx.keys),
            "Mangum": MangumCaller(lambda_rt, ctx.keys),
            "Vault": VaultCaller(rt, ctx.principals),
        }
        print(
            f"   {'call':34} {'HTTP p50':>9} {'p95':>8}  {'Mangum p50':>10} {'p95':>8}"
            f"  {'Vault p50':>9} {'p95':>8}  {'HTTP/Vault':>10}"
        )
        for call in ctx.calls + ctx.extra_calls:
            row = {}
            for p, (path, caller) in enumerate(paths.items()):
                if path == "Vault" and not caller.supports(call):
                    continue
                offset = 10_000 * (p + 1)
                try:
                    row[path] = timed(lambda i, c=caller, o=offset: c(call, o + i), n)  # noqa: B023
                except CallFailed as exc:
                    print(f"   {call.label}: {path} failed: {exc}")
            cells = []
            for path in paths:
                s = row.get(path)
                cells.append(f"{ms(p50(s))} {ms(p95(s))}" if s else f"{'-':>7} {'-':>7}")
            ratio = (
                f"{p50(row['HTTP']) / p50(row['Vault']):9.1f}x" if "HTTP" in row and "Vault" in row else "-"
            )
            print(f"   {call.label:34} {cells[0]}  {cells[1]:>19}  {cells[2]:>17}  {ratio:>10}")
        paths["HTTP"].close()
        throughput(server.url, ctx)
    rt.close()
    lambda_rt.close()


# --- throughput ------------------------------------------------------------------------------


def throughput(url: str, ctx: Context, levels: tuple[int, ...] = (1, 8, 32), seconds: float = 5.0) -> None:
    section(
        "Throughput: load_session by name over HTTP",
        f"{RUN} --only latency  (throughput runs on the same server process)",
        "C concurrent clients (asyncio + httpx2, one connection each), each a different seeded user,",
        f"back to back for {seconds:g} s after 1 s of warm-up; one uvicorn process, its default pool.",
    )
    call = Call("load_session", "tools/call", "load_session")
    print(f"   {'clients':>7} {'requests/s':>11} {'p50':>9} {'p95':>9} {'errors':>7}")
    for clients in levels:
        rate, samples, errors = asyncio.run(_load(url, ctx.crowd[:clients], call, seconds))
        print(
            f"   {clients:7d} {rate:11.0f} {ms(p50(samples))} ms {ms(p95(samples))} ms {errors:7d}"
            if samples
            else f"   {clients:7d} no successful request ({errors} errors)"
        )


async def _load(
    url: str, crowd: list[tuple[str, str]], call: Call, seconds: float
) -> tuple[float, list[float], int]:
    samples: list[float] = []
    errors = 0
    stop_at = time.perf_counter() + 1.0 + seconds
    count_from = time.perf_counter() + 1.0

    async def client(key: str, name: str) -> None:
        nonlocal errors
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "load_session", "arguments": {"name": name}},
            }
        ).encode()
        async with httpx2.AsyncClient(timeout=30) as http:
            while (now := time.perf_counter()) < stop_at:
                try:
                    reply = await http.post(url, content=body, headers=mcp_headers(key))
                    check_reply(reply.status_code, reply.content, call)
                except (CallFailed, httpx2.HTTPError):
                    if now >= count_from:
                        errors += 1
                    continue
                if now >= count_from:
                    samples.append(time.perf_counter() - now)

    await asyncio.gather(*(client(k, n) for k, n in crowd))
    return len(samples) / seconds, samples, errors
