"""Connections: a small pool reused across warm calls, and the two kinds of transaction.

Round trips, not statements, decide latency on Lambda (every one is a hop to Neon's pooler or
RDS), so a tenant transaction is pipelined: BEGIN, the tenant setting, the statements queued
in the block and COMMIT go out together; only a result fetched inside the block costs a flight
of its own. No health check on checkout: a connection that died while a Lambda was frozen is
found on first use (`first_use`) and replaced.

Which tenant a serving-path transaction is for, and how it opens, is one explicit value, a
`Tenant`, that the service passes down with every call (never a variable read from the
request's context): the space whose rows it touches, the call's riding admission (`Opening`,
made by `db.admission.Ride`: the admission statement then takes the tenant setting's place
after BEGIN, and the request costs the one flight of its tool) and the workspace entry
(`Entering`). What the transaction learnt goes back on those values (the admission's row, the
role the entry found), not through a callback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from uuid import UUID

import psycopg
import psycopg.errors
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from sessionvault.errors import NotAdmitted, WorkspaceBusy, WorkspaceDenied

T = TypeVar("T")
Connection = psycopg.Connection[dict[str, Any]]
Cursor = psycopg.Cursor[dict[str, Any]]

_SET_TENANT = "SELECT set_config('app.user_id', %s, true)"


@dataclass
class Opening:
    """A statement that opens the call's first tenant transaction of `user_id` in place of
    the plain tenant setting: it must set the tenant only when it lets the transaction's
    statements through, and answer a row whose `status` is 'ok' when it admitted. Once a
    transaction carried it and committed, `answer` holds that row (`done`); a transaction that
    failed leaves it unsent, with nothing of it kept."""

    user_id: str
    sql: str
    params: tuple[Any, ...]
    done: bool = False
    answer: dict[str, Any] | None = None


@dataclass
class Entering:
    """The call works in workspace `space` for `caller`: its tenant transactions for `space`
    open as the caller (the admission, or the caller's tenant setting), then enter the
    workspace in the same flight (`sessionvault_enter_workspace`, migration 0013), which checks
    the membership and its role for `access` (read, write or own) at that moment. `role` is
    what the last entry answered. The call's first entry that commits charges the workspace's
    own rate budget (`limits`: per minute, per day; 0 for none); later ones do not (`charged`)."""

    caller: str
    space: str
    access: str
    tool: str = ""
    role: str | None = None
    limits: tuple[int, int] = (0, 0)
    charged: bool = False


@dataclass(frozen=True)
class Tenant:
    """Whose rows a serving-path transaction touches (`space`) and how it opens: as the caller,
    by the call's riding admission while one is not yet carried (`opening`) or else the tenant
    setting, then entering the workspace `space` when it is not the caller's own (`entry`,
    whose `caller` is the person). Jobs and tests name a space alone: `Tenant(user_id)`."""

    space: str
    opening: Opening | None = field(default=None, compare=False)
    entry: Entering | None = field(default=None, compare=False)
    # The database's proof of the caller (migration 0020), from the call's admission: what a
    # serving-path transaction sets as its tenant. None for jobs, which set the plain id.
    proof: str | None = field(default=None, compare=False, repr=False)

    def setting(self, caller: str) -> str:
        """What the transaction sets `app.user_id` to, opening as `caller`: the freshest proof
        of the call (its riding admission's, once that committed, else the admission's), or
        the plain id where there is none (a job's role; the serving role's RLS refuses it)."""
        answer = self.opening.answer if self.opening is not None and self.opening.done else None
        return str((answer or {}).get("proof") or self.proof or caller)


_ENTER = "SELECT sessionvault_enter_workspace(%s, %s, %s, %s, %s) AS role"
_WORKSPACE_BUSY = "SV429"  # sessionvault_enter_workspace: the workspace's budget is used up


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

    def in_tenant(self, at: Tenant, work: Callable[[Connection], T], *, idempotent: bool) -> T:
        """`work` in a pipelined tenant transaction for `at` (as `tenant`), on the serving path:
        opened by its riding admission when it has one not yet carried, entering its workspace
        when it names one. If the connection turns out dead (closed by the server or a pooler
        while idle), `work` runs once more on a fresh one, provided nothing can have been
        committed: the failure came before the COMMIT's flight, or running `work` twice is
        harmless (`idempotent`)."""
        attempt = _Attempt(at, work)
        try:
            return attempt.run(self.pool)
        except psycopg.OperationalError:
            conn = attempt.conn
            dead = conn is not None and (conn.broken or conn.closed)
            if not dead or (attempt.final_flight and not idempotent):
                raise
        self._drop_dead()
        return _Attempt(at, work).run(self.pool)

    @contextmanager
    def tenant(self, user_id: UUID | str, proof: str = "") -> Iterator[Connection]:
        """A pipelined transaction in which RLS sees only `user_id`'s rows (the setting dies
        with it): by the plain id for the job roles, by the call's `proof` on the serving path.
        Fetch results after the block to keep the whole transaction one flight."""
        with self.pool.connection() as conn, conn.pipeline():
            conn.execute("BEGIN")
            conn.execute(_SET_TENANT, (proof or str(user_id),))
            yield conn
            conn.execute("COMMIT")

    @contextmanager
    def identity(self) -> Iterator[Connection]:
        """A transaction with no tenant: only the identity plane (users, api_keys) is visible."""
        with self.pool.connection() as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        self.pool.close()


class _Attempt(Generic[T]):
    """One try of a serving-path tenant transaction: BEGIN, the opening (the request's riding
    admission, or the tenant setting), `work`'s statements and COMMIT in one pipeline."""

    def __init__(self, at: Tenant, work: Callable[[Connection], T]) -> None:
        self.at, self.work = at, work
        self.conn: Connection | None = None
        self.final_flight = False  # what is still queued goes out with the COMMIT

    def run(self, pool: ConnectionPool[Connection]) -> T:
        enter = self.at.entry
        if enter is not None and enter.space != self.at.space:
            enter = None
        tenant = enter.caller if enter is not None else self.at.space
        ride = self.at.opening
        if ride is not None and (ride.done or ride.user_id != tenant):
            ride = None
        try:
            with pool.connection() as conn, conn.pipeline():
                self.conn = conn
                conn.execute("BEGIN")
                if ride is None:
                    conn.execute(_SET_TENANT, (self.at.setting(tenant),))
                else:
                    admitted = conn.execute(ride.sql, ride.params)
                if enter is not None:
                    limits = (0, 0) if enter.charged else enter.limits
                    entered = conn.execute(_ENTER, (enter.space, enter.access, enter.tool, *limits))
                result = self.work(conn)
                conn.execute("COMMIT")
                self.final_flight = True
        except psycopg.errors.InsufficientPrivilege:
            if enter is None:
                raise
            # A write the workspace's policies refused: the entry cleared the tenant.
            enter.role = None
            raise WorkspaceDenied(None) from None
        except psycopg.Error as exc:
            if enter is None or exc.sqlstate != _WORKSPACE_BUSY:
                raise
            window, limit, retry = str(exc.diag.message_detail or "minute:0:60").split(":")
            raise WorkspaceBusy(window, int(limit), int(retry)) from None
        if ride is not None:
            ride.done, ride.answer = True, admitted.fetchone()
            status = ride.answer["status"] if ride.answer else "no row"
            if status != "ok":  # the transaction's statements saw nothing: nor may the caller
                raise NotAdmitted(status)
        if enter is not None:
            row = entered.fetchone()
            enter.role = row["role"] if row else None
            if enter.role is None or enter.role.startswith("denied:"):
                raise WorkspaceDenied(enter.role)
            enter.charged = True
        return result
