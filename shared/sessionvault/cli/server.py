"""`sessionvault dev`, `serve`, `migrate` and `rotate-master-key`: the server's own commands.
Heavy modules (psycopg, mcp, torch) are imported inside the commands that use them."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from typing import TYPE_CHECKING

from sessionvault.names import DEFAULT_HOST, DEFAULT_PORT, LOCAL_USER, PORT_ENV
from sessionvault.settings import default_home

if TYPE_CHECKING:
    from sessionvault.local.target import Target


def serve(t: Target, host: str, port: int) -> None:
    import uvicorn

    from sessionvault.local import masterkey
    from sessionvault.local.upkeep import Upkeep
    from sessionvault.runtime import open_runtime
    from sessionvault.server.app import SessionVaultApp

    rt = open_runtime(t.settings)
    # Load a local model now, not inside the first save_session (it takes seconds).
    threading.Thread(target=rt.vault.embedder.embed, args=("warm up",), daemon=True).start()
    # No scheduler on a laptop: the server prunes old rate-limit and audit rows itself.
    upkeep = Upkeep.for_target(t).start()
    # Master-key rotation refuses while this marker names a live server.
    claimed = masterkey.claim(t.home) if t.home else None
    print(f"SessionVault serving MCP at http://{host}:{port}/mcp  (Ctrl-C to stop)", flush=True)
    try:
        # No proxy in front of a local server: X-Forwarded-For must not pick the client address
        # that failed authentications are counted by.
        uvicorn.run(SessionVaultApp(rt), host=host, port=port, log_level="warning", proxy_headers=False)
    finally:
        upkeep.stop()
        rt.close()
        if claimed:
            claimed.unlink(missing_ok=True)


def cmd_dev(args: argparse.Namespace) -> int:
    from sessionvault.local import target
    from sessionvault.local.connect.registry import quickstart

    home = default_home()
    print(f"Starting the embedded PostgreSQL in {home} ...", flush=True)
    t = target.embedded_target(home)
    print(f"State folder: {home}  (database, master key, audit salt; delete it to start over)")
    print(f"Embeddings: {t.settings.embeddings}")
    url = f"http://{args.host}:{args.port}/mcp"
    with target.admin_runtime(t) as rt:
        key = target.ensure_user(rt, LOCAL_USER, "make dev")
    if key:
        print("\nYour API key (shown once; store it, e.g. export SESSIONVAULT_API_KEY=...):")
        print(f"\n  {key}\n")
    else:
        print("\nUsing the existing local user; its key was shown on the first run.")
        print("Lost it? sessionvault key create --label laptop")
    print(quickstart(url, key), "\n", flush=True)
    serve(t, args.host, args.port)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from sessionvault.local import target

    serve(target.current(), args.host, args.port)
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from sessionvault.db.migrations import migrate
    from sessionvault.local import target

    applied = migrate(target.owner_url())
    print("applied: " + ", ".join(applied) if applied else "up to date")
    return 0


def cmd_rotate_master_key(args: argparse.Namespace) -> int:
    """Local mode: re-wrap every DEK under a new master key, then retire the old one."""
    from sessionvault.local import masterkey, target

    home = default_home()
    with target.admin_runtime(target.embedded_target(home)) as rt:
        result = masterkey.rotate(rt, home)
    retired = result.pop("retired", None)
    print(json.dumps(result))
    if not retired:
        print("some keys could not be re-wrapped; the old master key stays in place", file=sys.stderr)
        return 1
    print(f"new master key in place; the old one is kept as {os.path.basename(retired)} (delete it)")
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name, fn, help_ in (
        ("dev", cmd_dev, "embedded Postgres + local keys + local user, then serve"),
        ("serve", cmd_serve, "serve against DATABASE_URL (or the embedded database)"),
    ):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--host", default=DEFAULT_HOST)
        sp.add_argument("--port", type=int, default=int(os.environ.get(PORT_ENV, DEFAULT_PORT)))
        sp.set_defaults(func=fn)
    sub.add_parser("migrate", help="apply pending migrations").set_defaults(func=cmd_migrate)
    sub.add_parser(
        "rotate-master-key", help="local mode: re-wrap every data key under a new master key"
    ).set_defaults(func=cmd_rotate_master_key)
