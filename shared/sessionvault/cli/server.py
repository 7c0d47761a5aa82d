"""`sessionvault dev`, `serve`, `migrate` and `rotate-master-key`: the server's own commands.
Heavy modules (psycopg, mcp, numpy) are imported inside the commands that use them."""

from __future__ import annotations

import argparse
import functools
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessionvault.local import config
from sessionvault.local.host import statelock
from sessionvault.local.host.statelock import StateLock
from sessionvault.names import DEFAULT_HOST, DEFAULT_PORT, LOCAL_USER, PORT_ENV

if TYPE_CHECKING:
    from sessionvault.core.embedding.providers import Embedder
    from sessionvault.local.host.target import Target


def serve(
    t: Target,
    host: str,
    port: int,
    *,
    sock: socket.socket | None = None,
    lock: StateLock | None = None,
) -> None:
    """Serve until stopped (SIGTERM or SIGINT: in-flight requests drained, exit 0). `sock`:
    the port, bound already (`statelock.bind`); `lock`: the state folder's, held already; both
    are released when the server stops, the embedded database stopped when it was started
    for this server (and watched meanwhile: `supervisor`)."""
    from sessionvault.local.host import embedded, listener, masterkey, pressure, request_logs, supervisor
    from sessionvault.local.host.upkeep import Upkeep
    from sessionvault.runtime import open_runtime
    from sessionvault.server.app import SessionVaultApp

    logs = request_logs.route(t.home, terminal=sys.stdout.isatty())
    rt = open_runtime(t.settings)
    watch = supervisor.Supervisor(t.home).start() if t.home else None
    # No scheduler on a laptop: the server prunes old rate-limit and audit rows itself.
    upkeep = Upkeep.for_target(t).start()
    claimed = None
    try:
        warm_up(rt.vault.embedder)
        # The lock is what refuses a second server and a master-key rotation; server.pid is
        # only written (after the lock was won) for `backup`, which records whether a server ran.
        claimed = masterkey.claim(t.home) if t.home and lock else None
        if lock is not None:  # where it serves, beside the lock: found by connect, doctor, hooks
            statelock.record_address(lock.home, host, port)
        if logs is not None:
            print(f"Request logs (a JSON line per call): {logs}")
        print(f"SessionVault serving MCP at http://{host}:{port}/mcp  (Ctrl-C to stop)", flush=True)
        # No proxy in front of a local server: X-Forwarded-For must not pick the client address
        # that failed authentications are counted by.
        options: dict[str, Any] = {"log_level": "warning", "proxy_headers": False}
        app = pressure.Gate(SessionVaultApp(rt))  # 503 + Retry-After past a bounded queue
        sock = sock or statelock.bind(host, port)
        listener.build(app, host, port, **options).run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # a stop signal between the banner and the server's own handlers: a clean stop too
    finally:
        if watch is not None:
            watch.stop()  # first: it would start the database the cleanup stops
        upkeep.stop()
        rt.close()
        if sock is not None:
            sock.close()
        if claimed:
            claimed.unlink(missing_ok=True)
        if lock is not None:
            statelock.forget_address(lock.home)
        if t.home is not None:
            # The server owns the database it serves from, however it got it (started, adopted
            # after a killed server, restarted): stopped on a clean exit unless another process
            # still holds it (issue 35 item 9).
            stopped = embedded.release(t.home, stop_if_last=True)
            database = "stopped" if stopped else "left running: another process uses it"
            if lock is not None:  # a server that served (not a failed start) says what stopped
                print(
                    f"SessionVault stopped: the server (requests drained); PostgreSQL {database}", flush=True
                )
        if lock is not None:
            lock.release()


WARM_MARK = "Local embedding model loaded"  # the line the warm-up prints when the model is ready


def warm_up(embedder: Embedder) -> threading.Thread | None:
    """Load the local model now, in the background, not inside the first search_sessions or
    save_session (loading it and the first pass take seconds); says when it is ready. Other
    embedders have nothing to load (a call to OpenAI would only spend a request)."""
    from sessionvault.core.embedding.providers import LocalEmbedder

    if not isinstance(embedder, LocalEmbedder):
        return None

    def load() -> None:
        started = time.monotonic()
        if embedder.embed("warm up") is None:  # the embedder has logged why, with the fix
            print("The local embedding model did not load: sessions are saved without embeddings", flush=True)
            return
        print(f"{WARM_MARK} ({embedder.model}, {time.monotonic() - started:.1f} s)", flush=True)

    thread = threading.Thread(target=load, name="sessionvault-warm-up", daemon=True)
    thread.start()
    return thread


def _claim(home: Path | None, host: str, port: int) -> tuple[socket.socket, StateLock | None]:
    """The port, then the state folder (when there is one): refused before anything is printed."""
    sock = statelock.bind(host, port)
    try:
        return sock, statelock.acquire(home) if home is not None else None
    except BaseException:
        sock.close()
        raise


def _interruptible(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """SIGTERM stops a server that is still starting as Ctrl-C does (cleanup included)."""

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        from sessionvault.local.host import listener

        with listener.stop_signals_interrupt():
            return command(args)

    return run


@_interruptible
def cmd_dev(args: argparse.Namespace) -> int:
    from sessionvault.local.host import target
    from sessionvault.local.setup.registry import quickstart

    cfg = config.load(flags={"port": args.port})
    home, port = cfg.state, cfg.port
    sock, lock = _claim(home, args.host, port)
    try:
        print(f"Starting the embedded PostgreSQL in {home} ...", flush=True)
        t = target.embedded_target(cfg)
        print(f"State folder: {home}  (database, master key, audit salt; delete it to start over)")
        if cfg.file.exists():
            print(f"Configuration: {cfg.file}  (sessionvault config show)")
        print(f"Embeddings: {t.settings.embeddings}")
        url = f"http://{args.host}:{port}/mcp"
        with target.admin_runtime(t) as rt:
            key = target.ensure_user(rt, LOCAL_USER, "make dev")
            hooks_file = target.ensure_hook_key(rt, LOCAL_USER, home, url)
        if key:
            print("\nYour API key (shown once; store it, e.g. export SESSIONVAULT_API_KEY=...):")
            print(f"\n  {key}\n")
        else:
            print("\nUsing the existing local user; its key was shown on the first run.")
            print("Lost it? sessionvault key create --label laptop")
        if hooks_file:
            print(f"The hooks' own key (read, checkpoint) is in {hooks_file}.")
        print(quickstart(url, key), "\n", flush=True)
    except BaseException:
        sock.close()
        if lock is not None:
            lock.release()
        raise
    serve(t, args.host, port, sock=sock, lock=lock)
    return 0


@_interruptible
def cmd_serve(args: argparse.Namespace) -> int:
    from sessionvault.local.host import target

    cfg = config.load(flags={"port": args.port})
    external = bool(cfg.env.get("DATABASE_URL"))
    sock, lock = _claim(None if external else cfg.state, args.host, cfg.port)
    try:
        t = target.current(cfg=cfg)
        target.check_database(t.settings.database_url)
    except BaseException:
        sock.close()
        if lock is not None:
            lock.release()
        raise
    serve(t, args.host, cfg.port, sock=sock, lock=lock)
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from sessionvault.db.migrations import migrate
    from sessionvault.local.host import target

    applied = migrate(target.owner_url())
    print("applied: " + ", ".join(applied) if applied else "up to date")
    return 0


def cmd_rotate_master_key(args: argparse.Namespace) -> int:
    """Local mode: re-wrap every DEK under a new master key, then retire the old one."""
    from sessionvault.local.host import masterkey, target

    cfg = config.load()
    home = cfg.state
    # Refused while a server holds the folder: it keeps the old key and would fail every request.
    statelock.refuse_if_held(home, "rotating the master key")
    with target.admin_runtime(target.embedded_target(cfg)) as rt:
        result = masterkey.rotate(rt, home)
    retired = result.pop("retired", None)
    print(json.dumps(result))
    if not retired:
        print("some keys could not be re-wrapped; the old master key stays in place", file=sys.stderr)
        return 1
    print(f"new master key in place; the old one is kept as {os.path.basename(retired)} (delete it)")
    return 0


def cmd_service(args: argparse.Namespace) -> int:
    from sessionvault.local.host import service

    s = service.build(port=getattr(args, "port", None), platform=args.platform)
    if args.action == "install":
        if args.print:
            print(s.text(), end="")
            return 0
        return service.install(s)
    if args.action == "uninstall":
        return service.uninstall(s)
    if args.action == "status":
        return service.status(s)
    return service.logs(s, follow=args.follow, lines=args.lines)


HOST_HELP = f"the address to listen on (default: {DEFAULT_HOST}, this machine only)"
PORT_HELP = f"the port to serve on (default: ${PORT_ENV}, else config.toml's port, else {DEFAULT_PORT})"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name, fn, help_ in (
        ("dev", cmd_dev, "run the server here: the embedded database, a master key and your first API key"),
        ("serve", cmd_serve, "run the server against $DATABASE_URL (else the embedded database)"),
    ):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--host", default=DEFAULT_HOST, help=HOST_HELP)
        sp.add_argument("--port", type=int, default=None, help=PORT_HELP)
        sp.set_defaults(func=fn)
    sp = sub.add_parser("service", help="run the server in the background (systemd user unit, launchd agent)")
    actions = sp.add_subparsers(dest="action", required=True)
    for action, help_ in (
        ("install", "write the unit (or agent) and start it at login"),
        ("uninstall", "stop it and remove the unit (or agent)"),
        ("status", "whether it is installed and running"),
        ("logs", "its logs (journalctl --user -u sessionvault; ~/Library/Logs/SessionVault)"),
    ):
        ap = actions.add_parser(action, help=help_)
        ap.add_argument(
            "--platform", choices=("linux", "darwin"), help="the OS to write for (default: this one)"
        )
        if action == "install":
            ap.add_argument("--port", type=int, default=None, help=PORT_HELP)
            ap.add_argument("--print", action="store_true", help="print the unit (or plist) only")
        if action == "logs":
            ap.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
            ap.add_argument(
                "-n", "--lines", type=int, default=100, help="how many recent lines (default: %(default)s)"
            )
        ap.set_defaults(func=cmd_service)
    sub.add_parser(
        "migrate",
        help="bring the database schema up to date ($DATABASE_OWNER_URL, else $DATABASE_URL, else embedded)",
    ).set_defaults(func=cmd_migrate)
    sub.add_parser(
        "rotate-master-key",
        help="local mode: a new master key, each user's data key re-wrapped under it (stop the server first)",
    ).set_defaults(func=cmd_rotate_master_key)
