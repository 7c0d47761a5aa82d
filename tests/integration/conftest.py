from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..support.cluster import Cluster, running_cluster
from ..support.fresh import Fresh, fresh_16, fresh_embedded


@pytest.fixture(scope="session")
def pg16() -> Iterator[Cluster]:
    with running_cluster("sv-fresh-") as cluster:
        yield cluster


def _on(server: str, request: pytest.FixtureRequest) -> Fresh:
    if server == "embedded-18":
        return fresh_embedded(request.getfixturevalue("pg"))
    return fresh_16(request.getfixturevalue("pg16"))


@pytest.fixture(params=["embedded-18", "password-16"])
def fresh(request: pytest.FixtureRequest) -> Fresh:
    """A new database on each server the migrations meet."""
    return _on(request.param, request)


@pytest.fixture
def fresh_twin(request: pytest.FixtureRequest, fresh: Fresh) -> Fresh:
    """Another new database on the same server as `fresh`."""
    return _on(request.node.callspec.params["fresh"], request)
