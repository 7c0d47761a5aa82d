"""The latency proxy used by the benchmarks: it forwards, it counts round trips, it delays them."""

import time
from collections.abc import Iterator

import psycopg
import pytest

from ..support.pgproxy import PgProxy, proxied_url


@pytest.fixture
def proxy(pg) -> Iterator[PgProxy]:
    with PgProxy(pg.app_url) as p:
        yield p


@pytest.fixture
def conn(pg, proxy: PgProxy) -> Iterator[psycopg.Connection]:
    # prepare_threshold=None as in the app's pool: psycopg otherwise prepares a statement on its
    # sixth run, and preparing is a round trip of its own (which the proxy duly counts)
    with psycopg.connect(proxied_url(pg.app_url, proxy), autocommit=True, prepare_threshold=None) as c:
        yield c


def test_the_url_goes_through_the_proxy_as_the_same_role(pg, proxy):
    url = proxied_url(pg.app_url, proxy)
    assert f"port={proxy.port}" in url and "host=127.0.0.1" in url
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT current_user, current_database(), 41 + 1").fetchone() == (
            "sessionvault_app",
            "sessionvault",
            42,
        )
    assert proxy.snapshot().connections == 1


def test_each_synchronous_statement_is_one_flight(conn, proxy):
    proxy.wait_idle()
    before = proxy.snapshot()
    for _ in range(7):
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert (proxy.snapshot() - before).flights == 7


def test_a_pipeline_is_one_flight(conn, proxy):
    proxy.wait_idle()
    before = proxy.snapshot()
    with conn.pipeline():
        first = conn.execute("SELECT 1")
        second = conn.execute("SELECT 2")
        third = conn.execute("SELECT 3")
    assert [c.fetchone() for c in (first, second, third)] == [(1,), (2,), (3,)]
    assert (proxy.snapshot() - before).flights == 1


def test_the_delay_is_paid_once_per_round_trip_and_can_change(conn, proxy):
    proxy.delay_ms = 20
    started = time.perf_counter()
    for _ in range(5):
        conn.execute("SELECT 1")
    assert time.perf_counter() - started >= 0.100
    proxy.delay_ms = 0
    started = time.perf_counter()
    for _ in range(5):
        conn.execute("SELECT 1")
    assert time.perf_counter() - started < 0.100


def test_reset_zeroes_and_returns_the_counts(conn, proxy):
    conn.execute("SELECT 1")
    proxy.wait_idle()
    held = proxy.reset()
    assert held.flights >= 1 and held.bytes_up > 0 and held.bytes_down > 0
    assert proxy.snapshot().flights == 0
    conn.execute("SELECT 1")
    assert proxy.snapshot().flights == 1
