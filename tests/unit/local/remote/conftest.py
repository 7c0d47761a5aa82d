"""The canned API server, one per module, its replies reset for each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fake_api import Fake


@pytest.fixture(scope="module")
def _server() -> Iterator[Fake]:
    f = Fake()
    yield f
    f.httpd.shutdown()
    f.httpd.server_close()


@pytest.fixture
def fake(_server: Fake) -> Fake:
    _server.replies, _server.seen = [], []
    return _server
