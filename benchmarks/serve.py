"""The server under test, in a process of its own (as `sessionvault serve` runs it): the real
ASGI app under uvicorn on 127.0.0.1, built from the public pieces only.

    BENCH_DATABASE_URL=... BENCH_MASTER_KEY=... BENCH_AUDIT_SALT=... \\
        python -m benchmarks.serve <port>

A process, not a thread of the benchmark: the clients (up to 32 at once) and the proxy must
not share the server's interpreter lock."""

from __future__ import annotations

import os
import sys

import uvicorn

from sessionvault.runtime import open_runtime
from sessionvault.server.app import SessionVaultApp

from .common import make_settings


def main() -> None:
    port = int(sys.argv[1])
    settings = make_settings(
        os.environ["BENCH_DATABASE_URL"], os.environ["BENCH_MASTER_KEY"], os.environ["BENCH_AUDIT_SALT"]
    )
    rt = open_runtime(settings)
    rt.vault.embedder.embed("warm up")  # load the local model before the first request, as `serve` does
    try:
        uvicorn.run(SessionVaultApp(rt), host="127.0.0.1", port=port, log_level="warning")
    finally:
        rt.close()


if __name__ == "__main__":
    main()
