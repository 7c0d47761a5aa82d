"""The server under test, in a process of its own, started as users start it: `sessionvault
serve` (cli/server.py: the port bound by `statelock.bind`, handed to uvicorn, the local model
warmed at start), against the database the benchmark names.

    BENCH_DATABASE_URL=... BENCH_MASTER_KEY=... BENCH_AUDIT_SALT=... \\
        python -m benchmarks.serve <port>

Not uvicorn on a socket uvicorn makes itself: the listening socket is where keep-alive latency
was lost (a protocol-0 socket left Nagle on every accepted connection, +40 ms per request on a
kept-alive connection) and a benchmark that starts the server its own way cannot see that.
A process, not a thread of the benchmark: the clients (up to 32 at once) and the proxy must
not share the server's interpreter lock."""

from __future__ import annotations

import os
import sys
import tempfile


def environment(database_url: str, master_key: str, audit_salt: str) -> dict[str, str]:
    """The variables `sessionvault serve` reads, for the benchmark's database and limits (no
    rate limit in the way of the figures), in a state folder of its own (no config.toml of the
    user's applies)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONVAULT_", "DATABASE_"))}
    env.update(
        DATABASE_URL=database_url,
        SESSIONVAULT_MASTER_KEY=master_key,
        SESSIONVAULT_AUDIT_SALT=audit_salt,
        SESSIONVAULT_EMBEDDINGS="local",
        SESSIONVAULT_RATE_PER_MINUTE="1000000",
        SESSIONVAULT_RATE_PER_DAY="100000000",
        SESSIONVAULT_PROTOCOL_RATE_PER_MINUTE="1000000",
        SESSIONVAULT_HOME=tempfile.mkdtemp(prefix="sessionvault-bench-serve-"),
    )
    return env


def main() -> None:
    from sessionvault.cli import main as cli

    port = sys.argv[1]
    env = environment(
        os.environ["BENCH_DATABASE_URL"], os.environ["BENCH_MASTER_KEY"], os.environ["BENCH_AUDIT_SALT"]
    )
    os.environ.clear()
    os.environ.update(env)
    sys.exit(cli.main(["serve", "--host", "127.0.0.1", "--port", port]))


if __name__ == "__main__":
    main()
