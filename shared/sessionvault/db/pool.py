"""Connections: a small pool, reused across warm calls, checked on checkout, tenant set per transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool


def _configure(conn: psycopg.Connection) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)
    conn.commit()


class Database:
    """One pool per process. `prepare_threshold=None` keeps it safe behind transaction-mode
    PgBouncer (Neon's pooled endpoint, RDS Proxy); `check` re-opens connections broken while a
    Lambda container was frozen."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 5.0) -> None:
        # Fail within seconds when the database is away: well inside API Gateway's 29 s.
        self.pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"prepare_threshold": None, "row_factory": dict_row, "connect_timeout": 5},
            configure=_configure,
            check=ConnectionPool.check_connection,
            open=False,
        )
        self.pool.open(wait=False)

    @contextmanager
    def tenant(self, user_id: UUID | str) -> Iterator[psycopg.Connection]:
        """A transaction in which RLS sees only `user_id`'s rows (the setting dies with it)."""
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT set_config('app.user_id', %s, true)", (str(user_id),))
            yield conn

    @contextmanager
    def identity(self) -> Iterator[psycopg.Connection]:
        """A transaction with no tenant: only the identity plane (users, api_keys) is visible."""
        with self.pool.connection() as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        self.pool.close()
