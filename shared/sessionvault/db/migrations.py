"""Versioned, idempotent SQL migrations, then the live SQL functions, run as the owner role
(never as the app role).

The `.sql` files ship inside the package (`sessionvault/db/sql/`), so an installed package
migrates. Each applied file's SHA-256 is recorded: editing a migration that a database already
ran is refused loudly (add a new file instead), rather than silently leaving that database
behind. An empty migration folder is an error too: "up to date" must never mean "found none".

Migrations keep tables, data moves and policies. Every SQL function has one live text,
`sql/functions/<name>.sql` (its definition, owner and grants), applied after the migrations
whenever its checksum changed, and all of them after any migration ran (a landed migration may
have replaced a function with its older text on the way up). They are applied twice in one
transaction: first with body checks off, so no order among them matters, then with checks on,
so every SQL-language body is checked against the complete catalogue. A fresh database and one
upgraded from any earlier migration end with the same functions (tests/integration/
test_sql_functions.py)."""

from __future__ import annotations

import hashlib
import os
import re
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

import psycopg
from psycopg import sql

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


def function_files(folder: Source) -> list[Source]:
    functions = folder / "functions"
    if not functions.is_dir():
        return []
    return sorted((f for f in functions.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)


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
            if through is None:
                _apply_functions(conn, function_files(folder), every=bool(applied))
    return applied


def _apply_functions(conn: psycopg.Connection, files: list[Source], every: bool) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_functions (name text PRIMARY KEY,"
        " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
    )
    done: dict[str, str] = dict(conn.execute("SELECT name, checksum FROM schema_functions").fetchall())
    todo = [f for f in files if every or done.get(version_of(f)) != checksum(f)]
    conn.execute("DELETE FROM schema_functions WHERE NOT name = ANY(%s)", ([version_of(f) for f in files],))
    if not todo:
        return
    texts = [f.read_text() for f in todo]
    # Replacing a function another role owns takes that role's membership (the migration owner
    # need not be a superuser: RDS); borrowed for this transaction's work, given back after.
    owners = sorted({o for t in texts for o in re.findall(r"OWNER TO (\w+);", t)})
    borrowed = [
        o
        for o in owners
        if not conn.execute("SELECT pg_has_role(%s, 'USAGE')", (o,)).fetchone()[0]  # type: ignore[index]
    ]
    # A new function is made by the migrating role and handed to its owner, who needs CREATE on
    # the schema for that; lent the same way.
    creating = [
        o
        for o in owners
        if not conn.execute("SELECT has_schema_privilege(%s, 'public', 'CREATE')", (o,)).fetchone()[0]  # type: ignore[index]
    ]
    for role in borrowed:
        conn.execute(sql.SQL("GRANT {} TO CURRENT_USER").format(sql.Identifier(role)))
    for role in creating:
        conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(role)))
    for check in ("off", "on"):
        conn.execute(f"SET LOCAL check_function_bodies = {check}")
        for text in texts:
            conn.execute(text)
    for role in creating:
        conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA public FROM {}").format(sql.Identifier(role)))
    for role in borrowed:
        conn.execute(sql.SQL("REVOKE {} FROM CURRENT_USER").format(sql.Identifier(role)))
    conn.execute(
        "INSERT INTO schema_functions (name, checksum) SELECT * FROM unnest(%s::text[], %s::text[])"
        " ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()",
        ([version_of(f) for f in todo], [checksum(f) for f in todo]),
    )


def create_database(server_url: str, name: str) -> None:
    """Create the database `name` on the server if it is not there yet (embedded set-up)."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def enable_login(owner_url: str, roles: tuple[str, ...]) -> None:
    """Let the migration-created roles log in (they get no superuser and no BYPASSRLS)."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        for role in roles:
            conn.execute(sql.SQL("ALTER ROLE {} LOGIN").format(sql.Identifier(role)))
