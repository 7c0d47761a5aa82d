"""The two servers of benchmarks/peer.py as its measurements see them: an MCP client on one
kept-alive connection, a server process started and timed to its first search, calls
interleaved between servers, a crowd of clients, and the memory a process holds."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2

from .workload import ServerProcess

PROTOCOL = "2025-06-18"  # both SDKs speak it (the peer's mcp 1.30, our mcp 2.x)


class Mcp:
    """One MCP client on one kept-alive connection: JSON-RPC POSTs, a JSON or SSE reply."""

    def __init__(self, url: str, key: str) -> None:
        self.url, self.client = url, httpx2.Client(timeout=120)
        self.headers = {
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
        }

    def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
        if params is not None:
            body["params"] = params
        reply = self.client.post(self.url, content=json.dumps(body).encode(), headers=self.headers)
        if method.startswith("notifications/"):
            return {}
        text = reply.text
        if reply.status_code != 200:
            raise RuntimeError(f"{method}: HTTP {reply.status_code}: {text[:200]}")
        if text.startswith(("event:", "data:")):
            text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
        message = json.loads(text)
        if "error" in message or message["result"].get("isError"):
            raise RuntimeError(f"{method}: {str(message.get('error') or message['result'])[:300]}")
        return dict(message["result"])

    def open(self) -> Mcp:
        self.rpc("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                "clientInfo": {"name": "sessionvault-bench", "version": "1"}})  # fmt: skip
        self.rpc("notifications/initialized")
        return self

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        result = self.rpc("tools/call", {"name": tool, "arguments": arguments})
        return json.dumps(result)

    def close(self) -> None:
        self.client.close()


# --- the servers --------------------------------------------------------------------------------


def rss_mib(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of one process, MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def tree_pss_mib(pid: int) -> float:
    """Proportional set size of a process and its descendants (PostgreSQL's backends share
    memory: their RSS would count it once per backend)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return total / 1024


@contextlib.contextmanager
def sessionvault_database() -> Iterator[tuple[Any, Path, str, str, str]]:
    """An embedded PostgreSQL of its own with one user and a key: (db, home, master, salt, key)."""
    from sessionvault.db.pool import Database
    from sessionvault.local.host import embedded
    from sessionvault.runtime import key_provider
    from sessionvault.service import accounts

    from .common import make_settings

    home = Path(tempfile.mkdtemp(prefix="sv-bench-peer-"))
    try:
        started = time.perf_counter()
        db = embedded.start(home)
        took = time.perf_counter() - started
        print(f"   SessionVault's embedded PostgreSQL started and migrated in {took:.1f} s (not in the cold")
        print("   start below: that is the server's, the database running, as `serve` meets it once started)")
        master, salt = base64.b64encode(os.urandom(32)).decode(), "bench-peer-salt-0123456789abcdef"
        admin = Database(db.admin_url, max_size=1)
        try:
            user = accounts.create_user(
                admin, key_provider(make_settings(db.app_url, master, salt)), "bench-peer"
            )
            key = accounts.create_key(admin, user, "bench", ("read", "write", "delete"))[0]
        finally:
            admin.close()
        yield db, home, master, salt, key
    finally:
        try:
            embedded.stop(home)
        finally:
            shutil.rmtree(home, ignore_errors=True)


class SessionVaultProcess(ServerProcess):
    """`sessionvault serve` (benchmarks/serve.py) as a Side's process: started at once, stopped by stop()."""

    def stop(self) -> None:
        self.__exit__(None, None, None)


class Side:
    """One server under test: how to start it, its calls, its current process and client.
    `stored`: what a store's reply holds when the record was stored (and embedded)."""

    def __init__(self, label: str, calls: dict[str, Any], spawn: Callable[[], Any], key: str, stored: str):
        self.label, self.calls, self.spawn, self.key, self.stored = label, calls, spawn, key, stored
        self.handle: Any = None  # a process wrapper with .proc, .url and stop()
        self.client: Mcp | None = None

    @property
    def pid(self) -> int:
        return int(self.handle.proc.pid)

    @property
    def url(self) -> str:
        return str(self.handle.url)

    def start(self, probe: str) -> float:
        """Seconds from the process's start to its first search answered (then a client is
        opened on a kept-alive connection for the calls that follow)."""
        started = time.perf_counter()
        self.handle = self.spawn()
        tool, args = self.calls["search"](probe)
        while time.perf_counter() - started < 300:
            if self.handle.proc.poll() is not None:
                detail = getattr(self.handle, "output", str)()[-2000:]
                raise RuntimeError(f"{self.label} exited at start {detail}")
            client = Mcp(self.url, self.key)
            try:
                client.call(tool, args)
                took = time.perf_counter() - started
                self.client = client.open()
                return took
            except (httpx2.TransportError, RuntimeError) as exc:
                client.close()
                if isinstance(exc, RuntimeError) and "HTTP 503" not in str(exc):
                    raise  # an answer, not a server still starting
                time.sleep(0.02)
        raise RuntimeError(f"{self.label} answered no search within 300 s")

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.handle is not None:
            self.handle.stop()
            self.handle = None

    def do(self, kind: str, arg: Any, client: Mcp | None = None) -> str:
        client = client or self.client or _no_client(self.label)
        if kind == "ping":  # the MCP stack and the client alone: no tool, no database
            return json.dumps(client.rpc("ping"))
        tool, args = self.calls[kind](arg)
        reply = client.call(tool, args)
        if kind == "store" and self.stored not in reply:
            raise RuntimeError(f"{self.label} did not store: {reply[:300]}")
        return reply


def _no_client(label: str) -> Mcp:
    raise RuntimeError(f"{label} is not started")


def interleaved(lanes: list[tuple[str, Side, str]], args: list[Any], skip: int = 3) -> dict[str, list[float]]:
    """Each arg through every lane in turn, the order rotated each time; the first `skip` untimed."""
    # Rotated: a server called right after the other finds the CPU (2 cores) and the caches as
    # the other left them, so neither may always go first.
    samples: dict[str, list[float]] = {label: [] for label, _, _ in lanes}
    for i, arg in enumerate(args):
        for label, side, kind in lanes[i % len(lanes) :] + lanes[: i % len(lanes)]:
            started = time.perf_counter()
            side.do(kind, arg)
            if i >= skip:
                samples[label].append(time.perf_counter() - started)
    return samples


def crowd(side: Side, names: list[str], clients: list[Mcp], per_client: int) -> float:
    """Requests per second: these clients, each on its own kept-alive connection, fetching."""
    for c in clients:
        side.do("fetch", names[0], c)  # untimed: a connection the server closed when idle reopens here
    gate, failures = threading.Barrier(len(clients) + 1), []

    def run(n: int, client: Mcp) -> None:
        gate.wait()
        try:
            for j in range(per_client):
                side.do("fetch", names[(n * per_client + j) % len(names)], client)
        except Exception as exc:  # reported below: a failed call must not count as done
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(n, c)) for n, c in enumerate(clients)]
    for t in threads:
        t.start()
    gate.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    if failures:
        raise RuntimeError(f"{side.label}: {len(failures)} clients failed: {failures[0]}")
    return len(clients) * per_client / (time.perf_counter() - started)
