"""Versioned, idempotent SQL migrations, run as the owner role (never as the app role).

Each applied file's SHA-256 is recorded: editing a migration that a database already ran is
refused loudly (add a new file instead), rather than silently leaving that database behind."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import psycopg

from sessionvault.errors import ConfigError

# Repo layout: shared/sessionvault/migrations.py -> ../../infrastructure/migrations
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "infrastructure" / "migrations"
_LOCK_ID = 0x5E55_10A7  # one migrator at a time, whoever else is starting


def migrations_dir() -> Path:
    return Path(os.environ.get("SESSIONVAULT_MIGRATIONS_DIR", DEFAULT_DIR))


def checksum(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pending(conn: psycopg.Connection, folder: Path) -> list[Path]:
    done = dict(conn.execute("SELECT version, checksum FROM schema_migrations").fetchall())
    files = sorted(folder.glob("*.sql"))
    changed = [p.stem for p in files if p.stem in done and done[p.stem] != checksum(p)]
    if changed:
        raise ConfigError(
            f"migration(s) {', '.join(changed)} changed after this database applied them;"
            " restore the file and put the change in a new migration"
        )
    return [p for p in files if p.stem not in done]


def migrate(owner_url: str, folder: Path | None = None) -> list[str]:
    """Apply every migration not yet recorded; returns the versions applied (empty = no-op)."""
    folder = folder or migrations_dir()
    applied: list[str] = []
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY,"
            " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
            for path in pending(conn, folder):
                conn.execute(path.read_text())
                conn.execute(
                    "INSERT INTO schema_migrations (version, checksum) VALUES (%s, %s)",
                    (path.stem, checksum(path)),
                )
                applied.append(path.stem)
    return applied
