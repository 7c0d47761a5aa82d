"""How long a CLI command takes, start to exit, as a user types it: `sessionvault --version`,
`--help`, and `sessions list` against a canned loopback API (no server, no database: what is
measured is the interpreter, the imports and one HTTP call). Each sample is a fresh process;
the variants are interleaved round by round so a change of load hits all of them alike.

    .venv/bin/python -m benchmarks.cli_start [--rounds N]

What each command may import is held by tests/unit/cli/test_main.py (no MCP SDK, pydantic,
psycopg or numpy); this prints the times that follow from it."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .common import ROOT

LISTING = json.dumps(
    {
        "sessions": [
            {
                "name": "feature-x",
                "repo": "github.com/acme/app",
                "preview": "half done",
                "version": 2,
                "client": "claude-code",
                "updated_at": "2025-01-02T10:11:12+00:00",
            }
        ],
        "next_cursor": None,
    }
).encode()


class _Canned(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(LISTING)))
        self.end_headers()
        self.wfile.write(LISTING)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cli_start")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Canned)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    program = str(ROOT / ".venv" / "bin" / "sessionvault")
    commands = {
        "sessionvault --version": [program, "--version"],
        "sessionvault --help": [program, "--help"],
        "sessionvault sessions list": [program, "sessions", "list", "--url", url],
    }
    samples: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as home:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("SESSIONVAULT_")},
            "HOME": home,
            "SESSIONVAULT_HOME": os.path.join(home, ".sessionvault"),
            "SESSIONVAULT_API_KEY": "sv_live_bench",
        }
        for _ in range(args.rounds + 1):  # the first round warms the page cache, not counted
            for name, command in commands.items():
                started = time.perf_counter()
                subprocess.run(command, env=env, capture_output=True, check=True)
                samples[name].append(time.perf_counter() - started)
    httpd.shutdown()
    python = sys.version.split()[0]
    print(f"== CLI start to exit (a fresh process each, median / max of {args.rounds}; Python {python})")
    for name, taken in samples.items():
        kept = taken[1:]
        print(f"   {name:<30} {statistics.median(kept):6.3f} s  {max(kept):6.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
