"""One instance of the `fleet` section (benchmarks/fleet.py): a stand-in for one warm Lambda
execution environment of the MCP function.

As functions/mcp/handler.py builds it: `open_runtime(settings, pool_size=1)` (one database
connection, here to PgBouncer) and `SessionVaultApp(rt)`, with the production limits (60 tool
calls a minute and 1,000 a day per user unless BENCH_RATE_PER_MINUTE says otherwise). Served
over HTTP by uvicorn on a socket bound as `sessionvault serve` binds it, instead of Mangum
behind API Gateway; the driver sends each instance one request at a time, as Lambda does.

The embedder is a stand-in for text-embedding-3-small: 1536-d unit vectors drawn from a hash of
the text, computed in microseconds (the Lambda waits on OpenAI's network call instead; what is
measured here is the database and the instance, not a model). Stored vectors are 1536-d, so
saves insert into and searches walk the same HNSW index (sessions_embedding_1536) as in AWS.

    BENCH_DATABASE_URL=... BENCH_MASTER_KEY=... BENCH_AUDIT_SALT=... \\
        python -m benchmarks.fleet_serve <port>"""

from __future__ import annotations

import hashlib
import os
import sys

import numpy as np

DIMS = 1536


class StandInEmbedder:
    model = "bench:stand-in-1536"

    def embed(self, text: str) -> list[float] | None:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()


def main() -> None:
    from sessionvault.local.host import listener, statelock
    from sessionvault.runtime import open_runtime
    from sessionvault.server.app import SessionVaultApp
    from sessionvault.settings import Settings

    port = int(sys.argv[1])
    env = {
        "DATABASE_URL": os.environ["BENCH_DATABASE_URL"],
        "SESSIONVAULT_MASTER_KEY": os.environ["BENCH_MASTER_KEY"],
        "SESSIONVAULT_AUDIT_SALT": os.environ["BENCH_AUDIT_SALT"],
        "SESSIONVAULT_EMBEDDINGS": "none",  # replaced below by the stand-in
        "SESSIONVAULT_RATE_PER_MINUTE": os.environ.get("BENCH_RATE_PER_MINUTE", "60"),
        "SESSIONVAULT_RATE_PER_DAY": os.environ.get("BENCH_RATE_PER_DAY", "1000"),
    }
    rt = open_runtime(Settings.from_env(env), pool_size=1)
    rt.vault.embedder = StandInEmbedder()
    sock = statelock.bind("127.0.0.1", port)
    try:
        server = listener.build(
            SessionVaultApp(rt), "127.0.0.1", port, log_level="warning", proxy_headers=False
        )
        server.run(sockets=[sock])
    finally:
        rt.close()
        sock.close()


if __name__ == "__main__":
    main()
