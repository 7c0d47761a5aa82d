"""A TCP proxy in front of PostgreSQL that adds network latency and counts round trips.

    with PgProxy(embedded.app_url, delay_ms=3) as proxy:
        url = proxied_url(embedded.app_url, proxy)     # host=127.0.0.1 port=<proxy.port>
        before = proxy.snapshot()
        ...                                             # talk to the database through `url`
        proxy.wait_idle()
        print((proxy.snapshot() - before).flights)

A *flight* is a burst of client->server bytes on one connection that starts after the server
last sent something on that connection (or is the connection's first). A synchronous query is
one flight; a pipeline of statements sent before reading any answer is one flight. A burst of
nothing but Flush or Terminate messages, which the server does not answer, starts none (psycopg
sends a lone Flush when a pipeline's results arrive in pieces; a pool closing a connection
sends Terminate). The delay (`delay_ms`, changeable while running) is applied once per flight,
before its first byte is forwarded, so each round trip costs about `delay_ms` more: a one-way
delay standing in for the whole round trip.

Plain threads and blocking sockets, two per proxied connection: enough for the few dozen
connections of a connection pool. The upstream may be a Unix-socket directory (the embedded
server listens only there, with trust authentication for local connections) or a TCP host.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from dataclasses import dataclass, fields
from typing import Any

from psycopg.conninfo import conninfo_to_dict, make_conninfo

_CHUNK = 65536


@dataclass(frozen=True)
class Counters:
    """What went through the proxy (all connections together)."""

    flights: int = 0  # client->server bursts, i.e. round trips started by clients
    connections: int = 0  # client connections accepted
    bytes_up: int = 0  # client -> server
    bytes_down: int = 0  # server -> client
    delayed: int = 0  # flights that were delayed
    delayed_s: float = 0.0  # the delay they actually got (time.sleep overshoots a little)

    def __sub__(self, other: Counters) -> Counters:
        return Counters(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    @property
    def mean_delay_s(self) -> float:
        return self.delayed_s / self.delayed if self.delayed else 0.0


def upstream_address(url: str) -> tuple[int, object]:
    """(address family, address) of the server a libpq URL or conninfo string points at: the
    socket file `<host>/.s.PGSQL.<port>` when host is a directory, else (host, port) over TCP."""
    params = conninfo_to_dict(url)
    host = (params.get("host") or "").split(",")[0] or "/tmp"
    port = int(str(params.get("port") or "5432").split(",")[0])
    if host.startswith("/") or os.path.isdir(host):
        return socket.AF_UNIX, os.path.join(host, f".s.PGSQL.{port}")
    return socket.AF_INET, (params.get("hostaddr") or host, port)  # create_connection: v4 or v6


def proxied_url(url: str, proxy: PgProxy) -> str:
    """`url` rewritten to go through `proxy` (same user, database and options).

    sslmode=disable: the upstream is reached over a Unix socket (no TLS there), so letting libpq
    ask for TLS first would only add a refused SSLRequest round trip to every connect."""
    params = {k: v for k, v in conninfo_to_dict(url).items() if k not in ("hostaddr", "sslmode")}
    params.update(host=proxy.host, port=str(proxy.port), sslmode="disable")
    return make_conninfo(**params)


class _Link:
    """One proxied connection: the client socket, the server socket, and whether the server has
    answered since the client last sent something."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.answered = True  # the first bytes of a connection start a flight
        self.closed = False


class PgProxy:
    def __init__(self, upstream_url: str, *, delay_ms: float = 0.0, host: str = "127.0.0.1") -> None:
        self.family, self.upstream = upstream_address(upstream_url)
        self.host = host
        self.port = 0
        self.delay_ms = delay_ms  # read on every flight: change it at any time
        self._lock = threading.Lock()
        self._links: set[_Link] = set()
        self._counts: dict[str, Any] = {f.name: type(f.default)() for f in fields(Counters)}
        self._last_activity = time.monotonic()
        self._listener: socket.socket | None = None
        self._acceptor: threading.Thread | None = None
        self._stopping = False

    # --- life cycle -------------------------------------------------------------------------

    def start(self) -> PgProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, 0))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._acceptor = threading.Thread(target=self._accept_loop, name="pgproxy-accept", daemon=True)
        self._acceptor.start()
        return self

    def stop(self) -> None:
        self._stopping = True
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        if self._acceptor is not None:
            self._acceptor.join(timeout=2)
        with self._lock:
            links = list(self._links)
        for link in links:
            self._close(link)

    def __enter__(self) -> PgProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- counters ---------------------------------------------------------------------------

    def snapshot(self) -> Counters:
        with self._lock:
            return Counters(**self._counts)

    def reset(self) -> Counters:
        """Zero the counters; returns what they held."""
        with self._lock:
            before = Counters(**self._counts)
            self._counts = {f.name: type(f.default)() for f in fields(Counters)}
            return before

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._links)

    def wait_idle(self, quiet_ms: float = 15.0, timeout: float = 5.0) -> bool:
        """Wait until no connection awaits an answer and nothing moved for `quiet_ms` (work the
        server does after answering its own client, e.g. an audit write, finishes first).
        False if that did not happen within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        quiet = quiet_ms / 1000
        while True:
            with self._lock:
                busy = any(not link.answered for link in self._links)
                idle_for = time.monotonic() - self._last_activity
            if not busy and idle_for >= quiet:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(min(quiet / 3, 0.005))

    # --- plumbing ---------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stopping:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                if self.family == socket.AF_UNIX:
                    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    server.connect(self.upstream)
                else:
                    server = socket.create_connection(self.upstream)  # type: ignore[arg-type]
            except OSError:
                client.close()
                continue
            for sock in (client, server):
                if sock.family in (socket.AF_INET, socket.AF_INET6):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = _Link(client, server)
            with self._lock:
                self._links.add(link)
                self._counts["connections"] += 1
                self._last_activity = time.monotonic()
            threading.Thread(target=self._upstream_pump, args=(link,), daemon=True).start()
            threading.Thread(target=self._downstream_pump, args=(link,), daemon=True).start()

    def _upstream_pump(self, link: _Link) -> None:
        """client -> server: a burst after an answer is a new flight, delayed once."""
        try:
            while True:
                data = link.client.recv(_CHUNK)
                if not data:
                    break
                with self._lock:
                    new_flight = link.answered and not _expects_no_answer(data)
                    link.answered = link.answered and not new_flight
                    self._counts["bytes_up"] += len(data)
                    if new_flight:
                        self._counts["flights"] += 1
                    self._last_activity = time.monotonic()
                delay = self.delay_ms
                if new_flight and delay > 0:
                    slept = time.perf_counter()
                    time.sleep(delay / 1000)  # overshoots by ~0.05-0.15 ms on Linux
                    slept = time.perf_counter() - slept
                    with self._lock:
                        self._counts["delayed"] += 1
                        self._counts["delayed_s"] += slept
                link.server.sendall(data)
        except OSError:
            pass
        finally:
            self._close(link)

    def _downstream_pump(self, link: _Link) -> None:
        """server -> client: marks the flight answered before the client can send again."""
        try:
            while True:
                data = link.server.recv(_CHUNK)
                if not data:
                    break
                with self._lock:
                    link.answered = True
                    self._counts["bytes_down"] += len(data)
                    self._last_activity = time.monotonic()
                link.client.sendall(data)
        except OSError:
            pass
        finally:
            self._close(link)

    def _close(self, link: _Link) -> None:
        with self._lock:
            if link.closed:
                return
            link.closed = True
            link.answered = True  # a connection that went away awaits nothing
            self._links.discard(link)
            self._last_activity = time.monotonic()
        for sock in (link.client, link.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


_NO_ANSWER = (ord("H"), ord("X"))  # Flush, Terminate: four-byte messages the server never answers


def _expects_no_answer(data: bytes) -> bool:
    """True if `data` is only Flush/Terminate messages (type byte + int32 length 4 each)."""
    if not data or len(data) % 5:
        return False
    return all(
        data[i] in _NO_ANSWER and data[i + 1 : i + 5] == b"\x00\x00\x00\x04" for i in range(0, len(data), 5)
    )
