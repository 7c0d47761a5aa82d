"""One request, one answer, one log line (pure ASGI middleware, outermost on every path but
/health): the request's context and log line made, the app run, whatever it raises answered
here (a `Refused` as it says; anything else a 500 with a generic body, the log naming the
exception's type, never its message), the outcome of an admitted call that failed written on
the audit row its admission wrote, the local per-address failure count kept, the line emitted.

The line is finished here from what came back: its status is the response that went out (seen
on its way, `Answer`), a refusal's facts are read off the `Refused` (`edge_check`,
`auth_reason`, its class). What a surface learns on the way (the tool, the admission's row, a
class for an error it answered itself) it notes on the context's log as it learns it."""

from __future__ import annotations

import contextlib
import json
import time

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sessionvault import telemetry
from sessionvault.db import audit
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server.admission import guard
from sessionvault.server.context import KEY, RequestContext
from sessionvault.server.edge import request_id, respond

INTERNAL = json.dumps({"error": "internal error"}).encode()


class Answer:
    """An ASGI `send` that notes whether the response has begun (no other may follow)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.status = 0  # 0: not begun

    @property
    def started(self) -> bool:
        return self.status != 0

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self._send(message)


class OneAnswer:
    def __init__(self, app: ASGIApp, runtime: Runtime, failures: guard.AuthFailureLimit | None) -> None:
        self.app, self.rt, self.failures = app, runtime, failures

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        headers = Headers(scope=scope)
        log = telemetry.RequestLog(
            request_id=request_id(scope, headers),
            ip=(scope.get("client") or ("", 0))[0],
            user_agent=headers.get("user-agent", ""),
        )
        answer = Answer(send)
        try:
            try:
                await self.app({**scope, KEY: RequestContext(headers, log)}, receive, answer)
            except Refused as refusal:
                refusal.__traceback__ = None  # a shared instance would grow it with every raise
                log.error_class = refusal.error_class
                log.edge_check = refusal.edge_check or log.edge_check
                log.auth_reason = refusal.auth_reason or log.auth_reason
                if not answer.started:
                    await respond(answer, refusal.status, refusal.body, refusal.headers)
        except Exception as exc:  # the catch-all: the type is logged, never the message
            log.failure, log.error_class = type(exc).__name__, "internal"
            if not answer.started:
                with contextlib.suppress(Exception):  # the client may be gone: log it anyway
                    await respond(answer, 500, INTERNAL)
        log.status = answer.status or 500  # what went out (0: nothing could be sent)
        log.latency_ms = int((time.perf_counter() - started) * 1000)
        if log.admitted and log.error_class:
            await anyio.to_thread.run_sync(self._finish, log)  # a database write: off the loop
        if self.failures is not None:
            if log.auth_reason:
                self.failures.failed(log.ip)
            elif log.admitted:
                self.failures.admitted(guard.key_digest(headers.get("authorization")))
        telemetry.emit(log)

    def _finish(self, log: telemetry.RequestLog) -> None:
        """The outcome of an admitted call that failed, on the row admission wrote. Requests
        refused before or at admission get no row from here: their log line counts them."""
        if log.user_id is None or log.audit_id is None:
            return
        try:
            audit.finish(self.rt.db, log.user_id, log.audit_id, log)
        except Exception as exc:  # the response is already sent; losing the row must be loud
            log.failure = f"audit write failed: {type(exc).__name__}"
