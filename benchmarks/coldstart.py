"""Cold start of the MCP Lambda handler: the imports of functions/mcp/handler.py, in fresh processes.

The handler builds its runtime at import (Secrets Manager, the pool), which needs AWS; what is
timed here is the part every cold start pays before that: its imports."""

from __future__ import annotations

import re
import statistics
import subprocess
import sys

from .common import ROOT, section

MODULES = "mangum, sessionvault.server.app, sessionvault.settings, sessionvault.runtime"
CODE = (
    "import time; t = time.perf_counter(); "
    f"import {MODULES}; "
    "import sys; heavy = [m for m in ('torch', 'openai', 'boto3', 'numpy') if m in sys.modules]; "
    "print(time.perf_counter() - t, heavy)"
)


def handler_imports(runs: int = 5) -> None:
    command = f'.venv/bin/python -c "{CODE}"'
    section("Cold start: the MCP handler's imports", command, f"median of {runs} fresh processes")
    samples, heavy = [], ""
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", CODE], capture_output=True, text=True, check=True, cwd=ROOT
        )
        seconds, heavy = out.stdout.split(" ", 1)
        samples.append(float(seconds))
    print(
        f"   median {statistics.median(samples) * 1000:.0f} ms"
        f" (min {min(samples) * 1000:.0f}, max {max(samples) * 1000:.0f});"
        f" heavy modules imported: {heavy.strip()}"
    )
    _top_packages()


def _top_packages(count: int = 8) -> None:
    """Where the import time goes, from one `python -X importtime` run: the self time of every
    module, summed per top-level package (no double counting of nested imports)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {MODULES}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    cost: dict[str, int] = {}
    for line in out.stderr.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+\d+ \| *(\S+)", line)
        if found:
            name = found.group(2).split(".")[0]
            cost[name] = cost.get(name, 0) + int(found.group(1))
    total = sum(cost.values())
    top = sorted(cost.items(), key=lambda kv: -kv[1])[:count]
    print(f'   command: .venv/bin/python -X importtime -c "import {MODULES}"')
    print(f"   self time by package (one run, {total / 1000:.0f} ms in all, -X importtime inflates it):")
    print("     " + ", ".join(f"{n} {us / 1000:.0f}" for n, us in top) + " (ms)")
