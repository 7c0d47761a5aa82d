"""How the local server listens and how it stops: uvicorn, with two of its defaults changed.

Every accepted connection gets TCP_NODELAY, whatever made the listening socket. asyncio sets it
only when the listening socket's protocol is IPPROTO_TCP (`base_events._set_nodelay`); a socket
made as `socket(AF_INET, SOCK_STREAM)` has protocol 0, and then Nagle's algorithm holds back the
second piece of every response (uvicorn writes the head and the body apart) until the client's
delayed ACK: every request after the first on a kept-alive connection waited ~40 ms, and every
real client keeps its connection alive. `statelock.bind` now asks for IPPROTO_TCP too; this
protocol makes sure of it on the accepted socket itself.

SIGTERM and SIGINT both stop it the same way: stop accepting, answer what is in flight (with
`Connection: close`, so a kept-alive client knows not to send more), close the idle kept-alive
connections, then return to the caller, whose cleanup runs (pid file, the embedded
PostgreSQL). uvicorn's own handling re-raises the signal after its shutdown: SIGTERM's default
action then killed the process before any cleanup, and SIGINT became KeyboardInterrupt (exit
130). A second SIGINT still forces the exit, as uvicorn does."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
DRAIN_S = 20  # in-flight requests get this long to finish once a stop is asked for


def set_nodelay(transport: asyncio.BaseTransport) -> None:
    """TCP_NODELAY on a transport's socket when it is TCP (a Unix socket has no Nagle)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):  # a connection already reset: nothing to speed up
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class NoDelayH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, with TCP_NODELAY set on the connection it is given. h11, not
    uvicorn's "auto": its graceful shutdown is the one read for the drain above (an in-flight
    response goes out with `Connection: close`, an idle connection is closed)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        set_nodelay(transport)
        super().connection_made(transport)

    def shutdown(self) -> None:
        """uvicorn closes the connection after an in-flight response but does not say so in it;
        `Connection: close` tells a kept-alive client not to send its next request here (a
        response already started has its head out: it is only closed after)."""
        cycle = self.cycle
        if cycle is not None and not cycle.response_started:
            cycle.default_headers = [*cycle.default_headers, (b"connection", b"close")]
        super().shutdown()


class LocalServer(uvicorn.Server):
    """uvicorn.Server that drains on SIGTERM as on SIGINT and then returns (no re-raise)."""

    stopped_by: int | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # signals reach only the main thread; a server in a thread is stopped by should_exit
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.stopped_by = self.stopped_by or sig
        super().handle_exit(sig, frame)


def build(app: Any, host: str, port: int, **options: Any) -> LocalServer:
    """The server for `app`, to be run on a socket bound already (`statelock.bind`)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=NoDelayH11Protocol,
        timeout_graceful_shutdown=DRAIN_S,
        **options,
    )
    return LocalServer(config)


def _interrupt(sig: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """While the server is being prepared (the database starting, the model loading), SIGTERM
    interrupts as Ctrl-C does, so the `finally` blocks that stop the database still run;
    the default action would end the process on the spot."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    original = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, original)
