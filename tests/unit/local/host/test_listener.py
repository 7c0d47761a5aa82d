"""Keep-alive at wire speed (issue 29, item 1): every connection the local server accepts has
TCP_NODELAY, whatever made the listening socket. Read from the accepted socket itself, not
inferred from a timing."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn

from sessionvault.local.host import listener, statelock


async def hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"hello"})


def protocol_zero_socket() -> socket.socket:
    """A listening socket made as statelock.bind made it before: protocol 0."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    assert sock.proto == 0
    return sock


@contextmanager
def running(server: uvicorn.Server, sock: socket.socket) -> Iterator[int]:
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def accepted_nodelay(server: uvicorn.Server, port: int) -> list[int]:
    """TCP_NODELAY of each connection the server holds, read from its side, after two
    requests on one kept-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for _ in range(2):
            conn.request("GET", "/")
            assert conn.getresponse().read() == b"hello"
        values = []
        for protocol in list(server.server_state.connections):
            sock = protocol.transport.get_extra_info("socket")  # type: ignore[attr-defined]
            values.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        return values
    finally:
        conn.close()


def test_the_bound_port_asks_for_tcp_itself() -> None:
    sock = statelock.bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


@pytest.mark.parametrize("make", [protocol_zero_socket, lambda: statelock.bind("127.0.0.1", 0)])
def test_every_accepted_connection_has_nodelay_whatever_made_the_socket(make: Any) -> None:
    server = listener.build(hello, "127.0.0.1", 0, log_level="warning")
    with running(server, make()) as port:
        values = accepted_nodelay(server, port)
    assert values and all(values), values


def test_without_the_protocol_a_protocol_zero_socket_leaves_nagle_on() -> None:
    """The check above can fail: plain uvicorn on a protocol-0 socket is what clients met."""
    server = uvicorn.Server(uvicorn.Config(hello, http="h11", log_level="warning"))
    with running(server, protocol_zero_socket()) as port:
        values = accepted_nodelay(server, port)
    assert values == [0]
