"""Where the MCP function's init CPU goes, by group of imports, without -X importtime's inflation:
the layout's own interpreter (python3.12 -I -S -B, /opt/python on sys.path, uvicorn kept out as
the handler keeps it out) imports each group in turn, in the order init meets them, and reports
the CPU time each took; the median of a few fresh processes. Printed by benchmarks/coldstart.py."""

from __future__ import annotations

import statistics
import subprocess
from typing import Any

GROUPS = (
    (
        "stdlib (asyncio, ssl, logging, http, ...)",
        "asyncio, json, logging, ssl, http.client, urllib.request, uuid",
    ),
    ("mangum", "mangum"),
    ("pydantic", "pydantic"),
    ("psycopg + pool", "psycopg, psycopg_pool"),
    ("sessionvault.runtime (records, vault, db, crypto)", "sessionvault.runtime"),
    ("starlette", "starlette.requests, starlette.responses"),
    ("mcp_types: the version-free models", "mcp_types"),
    ("mcp_types: the 2025-11-25 era", "mcp_types._v2025_11_25"),
    ("mcp_types: the 2026-07-28 era", "mcp_types._v2026_07_28"),
    (
        "mcp server: runner, transports",
        "mcp_types.methods, mcp.server.runner, mcp.server.streamable_http_manager",
    ),
    (
        "OAuth endpoints (mcp.server.auth)",
        "sessionvault.server.oauth.endpoints, sessionvault.server.oauth.consent",
    ),
    ("web view", "sessionvault.server.web.views"),
    ("the rest of sessionvault.server.app", "sessionvault.server.app"),
)

PROBE = """
import sys, time
sys.modules.setdefault("uvicorn", None)
sys.path[:0] = [sys.argv[1]]
for modules in sys.argv[2:]:
    started = time.process_time()
    for name in modules.split(", "):
        __import__(name)
    print((time.process_time() - started) * 1000)
"""


def import_groups(layout: Any, runs: int = 5) -> None:
    samples: list[list[float]] = [[] for _ in GROUPS]
    for _ in range(runs):
        argv = [layout.python, "-I", "-S", "-B", "-c", PROBE, str(layout.opt_python)]
        out = subprocess.run([*argv, *(m for _, m in GROUPS)], capture_output=True, text=True, check=True)
        for i, line in enumerate(out.stdout.split()):
            samples[i].append(float(line))
    medians = [statistics.median(s) for s in samples]
    print(f"   init's imports by group, CPU ms (median of {runs} fresh processes; total {sum(medians):.0f}):")
    for (label, _), ms in zip(GROUPS, medians, strict=True):
        print(f"     {label:<52} {ms:5.0f}")
