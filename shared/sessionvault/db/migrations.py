"""Versioned, idempotent SQL migrations, run as the owner role (never as the app role).

The `.sql` files ship inside the package (`sessionvault/db/sql/`), so an installed package
migrates. Each applied file's SHA-256 is recorded: editing a migration that a database already
ran is refused loudly (add a new file instead), rather than silently leaving that database
behind. An empty migration folder is an error too: "up to date" must never mean "found none"."""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

import psycopg

from sessionvault.errors import ConfigError

_LOCK_ID = 0x5E55_10A7  # one migrator at a time, whoever else is starting

Source = Path | Traversable


def migrations_dir() -> Source:
    """The packaged migrations, or SESSIONVAULT_MIGRATIONS_DIR when set (tests, forks)."""
    override = os.environ.get("SESSIONVAULT_MIGRATIONS_DIR")
    return Path(override) if override else resources.files("sessionvault.db") / "sql"


def migration_files(folder: Source) -> list[Source]:
    if not folder.is_dir():
        raise ConfigError(f"no migrations folder at {folder}: the package is incomplete")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    if not files:
        raise ConfigError(f"no migrations found in {folder}: the package is incomplete")
    return files


def version_of(file: Source) -> str:
    return file.name.removesuffix(".sql")


def checksum(file: Source) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


def pending(conn: psycopg.Connection, folder: Source) -> list[Source]:
    done: dict[str, str] = dict(conn.execute("SELECT version, checksum FROM schema_migrations").fetchall())
    files = migration_files(folder)
    changed = [version_of(f) for f in files if version_of(f) in done and done[version_of(f)] != checksum(f)]
    if changed:
        raise ConfigError(
            f"migration(s) {', '.join(changed)} changed after this database applied them;"
            " restore the file and put the change in a new migration"
        )
    return [f for f in files if version_of(f) not in done]


def migrate(owner_url: str, folder: Source | None = None, through: str | None = None) -> list[str]:
    """Apply every migration not yet recorded (up to and including `through`, when given);
    returns the versions applied (empty = no-op)."""
    folder = folder or migrations_dir()
    applied: list[str] = []
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY,"
            " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
            for file in pending(conn, folder):
                if through is not None and version_of(file) > through:
                    break
                conn.execute(file.read_text())
                conn.execute(
                    "INSERT INTO schema_migrations (version, checksum) VALUES (%s, %s)",
                    (version_of(file), checksum(file)),
                )
                applied.append(version_of(file))
    return applied


def create_database(server_url: str, name: str) -> None:
    """Create the database `name` on the server if it is not there yet (embedded set-up)."""
    from psycopg import sql

    with psycopg.connect(server_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def enable_login(owner_url: str, roles: tuple[str, ...]) -> None:
    """Let the migration-created roles log in (they get no superuser and no BYPASSRLS)."""
    from psycopg import sql

    with psycopg.connect(owner_url, autocommit=True) as conn:
        for role in roles:
            conn.execute(sql.SQL("ALTER ROLE {} LOGIN").format(sql.Identifier(role)))
