"""What the tenant proofs cost (issue 34, migration 0020): save, load, list and search over one
kept-alive HTTP connection to each of two `sessionvault serve` processes on this machine, one
running the package before the proofs (PROOFS_BASE: the `shared/` folder of an older checkout,
e.g. a `git worktree` of 79c2e05) and one running this tree's, each on an embedded database its
own package made and migrated, called in turn, call by call, so the machine's load weighs on both
alike. Prints p50 and p95 of each call on each side and the ratio after/before.

    PROOFS_BASE=/tmp/wt/shared .venv/bin/python -m benchmarks.proofs [rounds]"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from .common import p50, p95
from .workload import ServerProcess

SETUP = """
import base64, json, os, sys
from pathlib import Path
from sessionvault.db.pool import Database
from sessionvault.local.host import embedded
from sessionvault.runtime import key_provider
from sessionvault.service import accounts
from benchmarks.common import make_settings
db = embedded.start(Path(sys.argv[1]))
master = base64.b64encode(os.urandom(32)).decode()
settings = make_settings(db.app_url, master, "bench-proofs-salt-0123456789abcdef")
admin = Database(db.admin_url, max_size=1)
user = accounts.create_user(admin, key_provider(settings), "bench-proofs")
key = accounts.create_key(admin, user, "bench", ("read", "write", "delete"))[0]
admin.close()
embedded.release(Path(sys.argv[1]), stop_if_last=False)  # the server process uses it next
print(json.dumps({"app_url": db.app_url, "master": master, "key": key}))
"""
CALLS = ("save_session", "load_session", "list_sessions", "search_sessions")


class Side:
    def __init__(self, name: str, pythonpath: str) -> None:
        self.name, self.home = name, Path(tempfile.mkdtemp(prefix=f"sv-bench-proofs-{name}-"))
        env = {**os.environ, "PYTHONPATH": pythonpath}
        made = subprocess.run(
            [sys.executable, "-c", SETUP, str(self.home)], env=env, capture_output=True, text=True, check=True
        )
        setup = json.loads(made.stdout.strip().splitlines()[-1])
        self.key = setup["key"]
        self.server = ServerProcess(
            setup["app_url"], setup["master"], "bench-proofs-salt-0123456789abcdef", PYTHONPATH=pythonpath
        ).__enter__()
        parts = urlsplit(self.server.url)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
        self.times: dict[str, list[float]] = {call: [] for call in CALLS}
        self.n = 0

    def call(self, tool: str) -> None:
        self.n += 1
        arguments = {
            "save_session": {"name": f"s{self.n % 20}", "summary": f"step {self.n}: the proof's cost"},
            "load_session": {"name": f"s{max(self.n - 1, 0) % 20}"},
            "list_sessions": {},
            "search_sessions": {"query": "the cost of a proof"},
        }[tool]
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        )
        headers = {
            "Authorization": f"Bearer {self.key}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        }
        started = time.perf_counter()
        self.conn.request("POST", "/mcp", body=body, headers=headers)
        reply = self.conn.getresponse()
        data = reply.read()
        self.times[tool].append(time.perf_counter() - started)
        result = json.loads(data)["result"]
        assert reply.status == 200 and not result.get("isError"), (self.name, tool, data[:300])

    def close(self) -> None:
        self.conn.close()
        self.server.__exit__(None, None, None)
        from sessionvault.local.host import embedded

        embedded.stop(self.home)
        shutil.rmtree(self.home, ignore_errors=True)


def main(rounds: int = 150) -> None:
    base = os.environ.get("PROOFS_BASE")
    if not base:
        raise SystemExit("PROOFS_BASE: the shared/ folder of a checkout from before migration 0020")
    here = str(Path(__file__).resolve().parents[1] / "shared")
    sides = [Side("before", base), Side("after", here)]
    try:
        for side in sides:  # warm: the model, the pool, the first admission
            for tool in CALLS:
                side.call(tool)
                side.times[tool].clear()
        for r in range(rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            for tool in CALLS:
                for side in order:
                    side.call(tool)
        load = os.getloadavg()[0]
        print(f"tenant proofs' cost: {rounds} rounds, each call on each side in turn; load {load:.1f}")
        print(f"   {'call':16} {'before p50/p95 ms':>20} {'after p50/p95 ms':>20} {'after/before p50':>17}")
        for tool in CALLS:
            b, a = sides[0].times[tool], sides[1].times[tool]
            print(
                f"   {tool:16} {p50(b) * 1000:9.2f}/{p95(b) * 1000:<9.2f}"
                f" {p50(a) * 1000:9.2f}/{p95(a) * 1000:<9.2f} {p50(a) / p50(b):16.2f}x"
            )
    finally:
        for side in sides:
            side.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 150)
