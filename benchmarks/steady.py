"""The local server as users run it: keep-alive against a new connection per request, and
saves beside a busy process (issue 29).

Both sections run `sessionvault serve` (benchmarks/serve.py: the port bound as `dev` and
`serve` bind it) on an embedded PostgreSQL of their own in a temporary folder, not the seeded
database: what they measure is the serving path, not a large table.

keepalive  load_session by name over one kept-alive connection (as Claude Code, Codex, the
           bridge and the hooks use it) and over a new connection per request, interleaved
           call by call in one run; stdlib http.client on both sides of the comparison, so
           the client's own cost is the same.
soak       4 clients saving back to back (each its own user and keep-alive connection) for a
           bounded time, idle and then beside one busy process (a pure-Python loop pinned to
           no core, as another program would be), and the ratio of the two."""

from __future__ import annotations

import base64
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .common import RUN, ms, p50, p95, section


@dataclass
class Served:
    url: str
    keys: list[str]  # one API key per user, each its own user
    pid: int
    users: list[str]  # their ids, in the order of `keys`
    db: Any  # the embedded database (local.host.embedded.Embedded): for in-process calls
    settings: Any  # the server's Settings (database, master key, salt): for in-process calls


@contextmanager
def own_server(users: int = 1) -> Iterator[Served]:
    """`sessionvault serve` on a fresh embedded database with `users` users, one key each."""
    from sessionvault.db.pool import Database
    from sessionvault.local.host import embedded
    from sessionvault.runtime import key_provider
    from sessionvault.service import accounts

    from .common import make_settings
    from .workload import ServerProcess

    home = Path(tempfile.mkdtemp(prefix="sv-bench-steady-"))
    try:
        db = embedded.start(home)
        master_key = base64.b64encode(os.urandom(32)).decode()
        salt = "bench-steady-salt-0123456789abcdef"
        admin = Database(db.admin_url, max_size=1)
        try:
            settings = make_settings(db.app_url, master_key, salt)
            provider = key_provider(settings)
            keys, ids = [], []
            for n in range(users):
                ids.append(user := accounts.create_user(admin, provider, f"bench-steady-{n}"))
                keys.append(accounts.create_key(admin, user, "bench", ("read", "write", "delete"))[0])
        finally:
            admin.close()
        with ServerProcess(db.app_url, master_key, salt) as server:
            yield Served(server.url, keys, server.proc.pid, ids, db, settings)
    finally:
        try:
            embedded.stop(home)
        finally:
            shutil.rmtree(home, ignore_errors=True)


def rpc(tool: str, arguments: dict[str, object]) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    ).encode()


def headers(key: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }


def post(conn: http.client.HTTPConnection, path: str, body: bytes, key: str) -> dict[str, object]:
    conn.request("POST", path, body=body, headers=headers(key))
    reply = conn.getresponse()
    data = reply.read()
    if reply.status != 200:
        raise RuntimeError(f"HTTP {reply.status}: {data[:200]!r}")
    result = json.loads(data)["result"]
    if result.get("isError"):
        raise RuntimeError(f"tool error: {result.get('content')}")
    return dict(result)


# --- keep-alive ------------------------------------------------------------------------------


def keepalive(n: int = 60) -> None:
    section(
        "Keep-alive against a new connection per request (the server as `sessionvault serve` runs it)",
        f"{RUN} --only keepalive",
        f"load_session by name and tools/list, n={n} each way, interleaved call by call after 5 warm-ups;",
        "stdlib http.client: one kept-alive connection, or a new connection (and its handshake) per call.",
    )
    with own_server() as served:
        where = urlsplit(served.url)
        host, port, path = where.hostname or "127.0.0.1", where.port or 80, where.path
        key = served.keys[0]
        kept = http.client.HTTPConnection(host, port, timeout=30)
        post(kept, path, rpc("save_session", {"name": "bench-ka", "summary": "keep-alive figures"}), key)
        calls = {
            "load_session by name": rpc("load_session", {"name": "bench-ka"}),
            "tools/list": json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
        }
        print(
            f"   {'call':22} {'keep-alive p50':>14} {'p95':>8}  {'new conn p50':>12} {'p95':>8}  {'ratio':>6}"
        )
        for label, body in calls.items():
            samples: dict[str, list[float]] = {"kept": [], "new": []}
            for i in range(n + 5):
                for way in samples:
                    conn = kept if way == "kept" else http.client.HTTPConnection(host, port, timeout=30)
                    started = time.perf_counter()
                    post(conn, path, body, key)
                    took = time.perf_counter() - started
                    if way == "new":
                        conn.close()
                    if i >= 5:
                        samples[way].append(took)
            a, b = samples["kept"], samples["new"]
            print(
                f"   {label:22} {ms(p50(a))} ms {ms(p95(a))} ms  {ms(p50(b))} ms {ms(p95(b))} ms"
                f"  {p50(a) / p50(b):5.2f}x"
            )
        kept.close()


# --- saves beside a busy process ------------------------------------------------------------

SOAK_CLIENTS = 4
BUSY = "while True: pass"


def soak(seconds: float = 10.0) -> None:
    section(
        "Saves beside a busy process (the soak figure: 4 clients saving, idle and beside one busy process)",
        f"{RUN} --only soak",
        f"{SOAK_CLIENTS} clients, each its own user and kept-alive connection, save_session back to back",
        f"(a new summary each call: each save embeds) for {seconds:g} s after 1 s of warm-up; busy: one",
        f"`{BUSY}` process beside the server (another program wanting a core). Target: busy >= 0.5x idle.",
    )
    with own_server(users=SOAK_CLIENTS) as served:
        rows = {}
        for busy in (False, True):
            hog = subprocess.Popen([sys.executable, "-c", BUSY]) if busy else None
            try:
                rows[busy] = _saving(served, seconds)
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()
        print(f"   {'beside':8} {'saves/s':>8} {'p50':>9} {'p95':>9} {'errors':>7}")
        for busy, (rate, samples, errors) in rows.items():
            print(
                f"   {'busy' if busy else 'idle':8} {rate:8.1f} {ms(p50(samples))} ms {ms(p95(samples))} ms"
                f" {errors:7d}"
            )
        idle, loaded = rows[False][0], rows[True][0]
        print(f"   busy / idle: {loaded / idle if idle else 0:.2f}x  (target >= 0.5x)")


def _saving(served: Served, seconds: float) -> tuple[float, list[float], int]:
    where = urlsplit(served.url)
    samples: list[float] = []
    errors = 0
    lock = threading.Lock()
    count_from = time.perf_counter() + 1.0
    stop_at = count_from + seconds

    def connect() -> http.client.HTTPConnection:
        return http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port or 80, timeout=120)

    def client(n: int, key: str) -> None:
        nonlocal errors
        conn = connect()
        i = 0
        while (now := time.perf_counter()) < stop_at:
            i += 1
            body = rpc(
                "save_session",
                {
                    "name": f"soak-{n}-{i % 8}",
                    "repo": "github.com/bench/soak",
                    "summary": f"Client {n}, pass {i}: the payment webhook retries, then the refund flow",
                    "todos": [f"step {i}"],
                },
            )
            try:
                post(conn, where.path, body, key)
            except (OSError, RuntimeError, http.client.HTTPException):
                conn.close()
                conn = connect()
                if now >= count_from:
                    with lock:
                        errors += 1
                continue
            if now >= count_from:
                with lock:
                    samples.append(time.perf_counter() - now)
        conn.close()

    threads = [threading.Thread(target=client, args=(n, k)) for n, k in enumerate(served.keys)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(samples) / seconds, samples, errors


# --- back-pressure: a crowd of clients ------------------------------------------------------

CROWDS = (64, 160)  # below and past the gate's bound: 16 at work + 64 waiting (local/host/pressure.py)


def crowd(seconds: float = 10.0) -> None:
    """Many clients saving at once: what the server answers past its bound (pressure.Gate)."""
    section(
        f"Back-pressure: {' and '.join(map(str, CROWDS))} clients saving at once (16 users, kept-alive)",
        f"{RUN} --only crowd",
        f"back to back for {seconds:g} s after 1 s of warm-up; a client answered 503 waits its Retry-After.",
        "Before back-pressure (issue 29's soak): no 503 ever, loads waited 6-21 s, saves up to 65 s.",
    )
    with own_server(users=16) as served:
        print(f"   {'clients':>7} {'answer':>8} {'count':>7} {'p50':>9} {'p95':>9} {'max':>9}")
        for clients in CROWDS:
            answered = _crowd(served, clients, seconds)
            for status, samples in sorted(answered.items()):
                label = {0: "no reply", 200: "200", 503: "503"}.get(status, str(status))
                print(
                    f"   {clients:7d} {label:>8} {len(samples):7d} {ms(p50(samples))} ms"
                    f" {ms(p95(samples))} ms {ms(max(samples))} ms"
                )
            every = [s for samples in answered.values() for s in samples]
            rate = len(answered.get(200, [])) / seconds
            print(
                f"   {clients:7d} saves acknowledged: {rate:.1f}/s; the longest any client waited for an"
                f" answer: {max(every) if every else 0:.2f} s"
            )


def _crowd(served: Served, clients: int, seconds: float) -> dict[int, list[float]]:
    where = urlsplit(served.url)
    answered: dict[int, list[float]] = {}
    lock = threading.Lock()
    count_from = time.perf_counter() + 1.0
    stop_at = count_from + seconds

    def connect() -> http.client.HTTPConnection:
        return http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port or 80, timeout=120)

    def client(n: int, key: str) -> None:
        conn = connect()
        i = 0
        while (now := time.perf_counter()) < stop_at:
            i += 1
            body = rpc("save_session", {"name": f"crowd-{n}-{i % 4}", "summary": f"client {n} pass {i}"})
            try:
                conn.request("POST", where.path, body=body, headers=headers(key))
                reply = conn.getresponse()
                reply.read()
                status, wait = reply.status, float(reply.getheader("Retry-After") or 0)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = connect()
                status, wait = 0, 0.0
            if now >= count_from:
                with lock:
                    answered.setdefault(status, []).append(time.perf_counter() - now)
            if status == 503:
                time.sleep(wait)
        conn.close()

    threads = [
        threading.Thread(target=client, args=(n, served.keys[n % len(served.keys)])) for n in range(clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answered
