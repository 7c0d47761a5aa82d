"""Connections: a small pool reused across warm calls, and the two kinds of transaction.

Round trips, not statements, decide latency on Lambda (every one is a hop to Neon's pooler or
RDS), so a tenant transaction is pipelined: BEGIN, the tenant setting, the statements queued
in the block and COMMIT go out together; only a result fetched inside the block costs a flight
of its own. No health check on checkout: a connection that died while a Lambda was frozen is
found on first use (`first_use`) and replaced."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

T = TypeVar("T")
Connection = psycopg.Connection[dict[str, Any]]
Cursor = psycopg.Cursor[dict[str, Any]]

_SET_TENANT = "SELECT set_config('app.user_id', %s, true)"


def _configure(conn: Connection) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)


class Database:
    """One pool per process. Connections are in autocommit mode (a lone statement is its own
    transaction, with no BEGIN/COMMIT round trips); `prepare_threshold=None` keeps them safe
    behind transaction-mode PgBouncer (Neon's pooled endpoint, RDS Proxy)."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 5.0) -> None:
        self._url, self._sizes, self._timeout = url, (min_size, max_size), timeout
        self.pool = self._open_pool()

    def _open_pool(self) -> ConnectionPool[Connection]:
        # Fail within seconds when the database is away: well inside API Gateway's 29 s.
        pool: ConnectionPool[Connection] = ConnectionPool(
            self._url,
            min_size=self._sizes[0],
            max_size=self._sizes[1],
            timeout=self._timeout,
            kwargs={
                "autocommit": True,
                "prepare_threshold": None,
                "row_factory": dict_row,
                "connect_timeout": 5,
            },
            configure=_configure,
            open=False,
        )
        pool.open(wait=False)  # connects in the background; the first request waits if it must
        return pool

    def reopen(self) -> None:
        """A fresh pool after `close` (a closed psycopg pool cannot reopen): for a Lambda
        restored from a SnapStart snapshot, which must not share the snapshot's connections."""
        if self.pool.closed:
            self.pool = self._open_pool()

    def first_use(self, fn: Callable[[Connection], T]) -> T:
        """`fn` on a pooled connection, once more on a fresh one if the first was found dead
        (closed by the server or a pooler while idle). Only for a request's first statement:
        a connection that broke before answering it committed nothing."""
        conn: Connection | None = None
        try:
            with self.pool.connection() as conn:
                return fn(conn)
        except psycopg.OperationalError:
            if conn is None or not (conn.broken or conn.closed):
                raise  # a live connection's error (a timeout, say) is the answer, not a reason to retry
        self._drop_dead()
        with self.pool.connection() as conn:
            return fn(conn)

    def _drop_dead(self) -> None:
        """One dead connection found: its idle siblings most likely died with it (the same
        frozen Lambda, the same restarted server). Check them all now, so the retry gets a
        live one; this costs a round trip per idle connection, on this failure path only."""
        self.pool.check()

    def in_tenant(self, user_id: str, work: Callable[[Connection], T], *, idempotent: bool) -> T:
        """`work` in a pipelined tenant transaction (as `tenant`), on the serving path: if the
        connection turns out dead (closed by the server or a pooler while idle), `work` runs
        once more on a fresh one, provided nothing can have been committed: the failure came
        before the COMMIT's flight, or running `work` twice is harmless (`idempotent`)."""
        final_flight = False
        conn: Connection | None = None
        try:
            with self.pool.connection() as conn, conn.pipeline():
                conn.execute("BEGIN")
                conn.execute(_SET_TENANT, (user_id,))
                result = work(conn)
                conn.execute("COMMIT")
                final_flight = True  # what is still queued goes out with the COMMIT
            return result
        except psycopg.OperationalError:
            dead = conn is not None and (conn.broken or conn.closed)
            if not dead or (final_flight and not idempotent):
                raise
        self._drop_dead()
        with self.tenant(user_id) as conn:
            return work(conn)

    @contextmanager
    def tenant(self, user_id: UUID | str) -> Iterator[Connection]:
        """A pipelined transaction in which RLS sees only `user_id`'s rows (the setting dies
        with it). Fetch results after the block to keep the whole transaction one flight."""
        with self.pool.connection() as conn, conn.pipeline():
            conn.execute("BEGIN")
            conn.execute(_SET_TENANT, (str(user_id),))
            yield conn
            conn.execute("COMMIT")

    @contextmanager
    def identity(self) -> Iterator[Connection]:
        """A transaction with no tenant: only the identity plane (users, api_keys) is visible."""
        with self.pool.connection() as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        self.pool.close()
