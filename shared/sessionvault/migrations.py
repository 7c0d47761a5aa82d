"""Versioned, idempotent SQL migrations, run as the owner role (never as the app role)."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg

# Repo layout: shared/sessionvault/migrations.py -> ../../infrastructure/migrations
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "infrastructure" / "migrations"
_LOCK_ID = 0x5E55_10A7  # one migrator at a time, whoever else is starting


def migrations_dir() -> Path:
    return Path(os.environ.get("SESSIONVAULT_MIGRATIONS_DIR", DEFAULT_DIR))


def pending(conn: psycopg.Connection, folder: Path) -> list[Path]:
    done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
    return [p for p in sorted(folder.glob("*.sql")) if p.stem not in done]


def migrate(owner_url: str, folder: Path | None = None) -> list[str]:
    """Apply every migration not yet recorded; returns the versions applied (empty = no-op)."""
    folder = folder or migrations_dir()
    applied: list[str] = []
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
            for path in pending(conn, folder):
                conn.execute(path.read_text())
                conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (path.stem,))
                applied.append(path.stem)
    return applied
