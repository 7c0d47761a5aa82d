"""A call whose admission rides on its own first tenant transaction (`auth.Admitter.ride`,
`db.admission.Ride`): one flight instead of two. Its answer is held until the admission's row
is read; a refusal replaces it with the same 401 or 429 as ever. Also the admission in a
flight of its own, for every other call, and the 503 of a database that cannot answer it."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import anyio
import anyio.to_thread
import psycopg
import psycopg_pool
from starlette.types import Message, Send

from sessionvault import telemetry
from sessionvault.db.admission import Budget
from sessionvault.errors import Refused
from sessionvault.server.admission import admitter as auth
from sessionvault.server.context import RequestContext
from sessionvault.server.edge import UNAVAILABLE
from sessionvault.service.principal import Principal

DB_ERRORS = (psycopg.Error, psycopg_pool.PoolTimeout)
Run = Callable[[Principal, Send], Awaitable[None]]  # the call, as this Principal, answering to this send


async def ride_or_admit(
    admitter: auth.Admitter,
    context: RequestContext,
    scope_needed: str | None,
    budget: Budget,
    run: Run,
    send: Send,
) -> None:
    """The one admission flow of /mcp and the HTTP API: a call that needs `scope_needed` rides
    on its own transaction when this instance admitted its credential lately (one flight);
    every other call, and one whose held Principal went stale, is admitted in a flight of its
    own first. `scope_needed` None: never rides (protocol messages, streams, bodies). A second
    Authorization header is refused as any bad credential is (the SDK would read the first)."""
    log, base = context.log, context.base
    sent = context.headers.getlist("authorization")
    if len(sent) > 1:
        raise auth.refused(base, "duplicate")
    authorization = sent[0] if sent else None
    if scope_needed is not None:
        call = admitter.ride(authorization, scope_needed, log, base)
        if call is not None and await ridden(admitter, call, run, send, log, base):
            return
    await run(await admitted(admitter, authorization, budget, log, base), send)


async def ridden(
    admitter: auth.Admitter, call: auth.Ride, run: Run, send: Send, log: telemetry.RequestLog, base: str
) -> bool:
    """`run` as `call.principal`, its admission riding on its first transaction (one flight). The
    answer is held until the admission decides: it goes out (True), or the 401/429 is
    raised instead; False when the Principal this instance expected was stale (nothing was
    let through or written: the caller admits and runs the call again). A call that
    crashed is settled too before its error goes on: a refused caller still gets the 401,
    an admitted one's audit row is marked failed."""
    held, crash = _Held(), None
    try:  # the call's Principal carries the admission to its first transaction (admitter.ride)
        await run(call.principal, held)
    except Exception as exc:  # answered by the app's catch-all, once settled
        crash = exc
    except BaseException:  # cancelled (the client went away): still counted and audited
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await anyio.to_thread.run_sync(admitter.settle, call, log, base)
        raise
    try:
        if call.admission.result is not None:  # decided in the call's own transaction: no I/O left,
            settled = admitter.settle(call, log, base)  # so no thread hop (~0.1-0.3 ms) either
        else:
            settled = await anyio.to_thread.run_sync(admitter.settle, call, log, base)
    except DB_ERRORS as exc:
        raise unavailable(log, exc) from None
    if not settled:
        log.error_class = None  # the held answer is dropped: the call runs again
    elif crash is not None:
        raise crash
    else:
        await held.release(send)
    return settled


async def admitted(
    admitter: auth.Admitter, authorization: str | None, budget: Budget, log: telemetry.RequestLog, base: str
) -> Principal:
    """The admission statement in a flight of its own, off the event loop."""
    try:
        who: Principal = await anyio.to_thread.run_sync(admitter.admit, authorization, budget, log, base)
    except DB_ERRORS as exc:
        raise unavailable(log, exc) from None
    return who


def unavailable(log: telemetry.RequestLog, exc: Exception) -> Refused:
    """A database that cannot answer the admission: a 503 (try again), never a 401 or a 500."""
    log.failure = type(exc).__name__
    return Refused(503, UNAVAILABLE, "db", {"Retry-After": "5"})


class _Held:
    """An ASGI `send` that keeps the response until `release` (or drops it, never sent)."""

    def __init__(self) -> None:
        self._messages: list[Message] = []

    async def __call__(self, message: Message) -> None:
        self._messages.append(message)

    async def release(self, send: Send) -> None:
        for message in self._messages:
            await send(message)
