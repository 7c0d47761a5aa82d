"""Fixtures of the attack tier: generous rate limits (the fuzzers send thousands of calls), a
fake embeddings provider, and users that are deleted again at the end of each module
(thousands of fuzzed sessions would otherwise wait for every later re-embed run of the suite)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from sessionvault.db import pool
from sessionvault.local.host import embedded
from sessionvault.runtime import Runtime, open_runtime
from sessionvault.settings import Settings

from ..conftest import User, free_port, make_settings, make_user
from ..support import injection
from .support import FakeEmbeddings

# Hypothesis is a dev dependency; until it is installed the tier is left out, loudly (below).
HYPOTHESIS = importlib.util.find_spec("hypothesis") is not None
if not HYPOTHESIS:
    collect_ignore_glob = ["test_fuzz_*.py", "test_isolation_model.py"]

# `make fuzz` raises it: every generated-example count of the tier is multiplied by it.
SCALE = float(os.environ.get("SESSIONVAULT_FUZZ_SCALE", "1"))
# `make test` (and CI) runs the same examples every time, so that a red run is reproducible and
# a green one stays green; `make fuzz` (the scale set) explores with a fresh seed on every run.
# Both seeds found real bugs: when `make fuzz` finds one, its reproducer becomes a fixed test.
DERANDOMIZE = "SESSIONVAULT_FUZZ_SCALE" not in os.environ


def scaled(n: int) -> int:
    return max(1, round(n * SCALE))


EMBED_MODEL = "fake-embed-384"
GENERATED: dict[str, int] = {}  # test -> requests it generated, for the closing summary
OUTCOMES: dict[str, dict[str, int]] = {}  # fuzzer -> "status/error class" -> count


def attack_settings(pg: embedded.Embedded, embeddings_url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "rate_per_minute": 10**6,
        "rate_per_day": 10**7,
        "protocol_rate_per_minute": 10**6,
        "auth_failures_per_minute": 10**6,
        "max_sessions_per_user": 10**6,
        "max_bytes_per_user": 10**12,
        "embeddings": "openai",
        "openai_base_url": embeddings_url,
        "openai_api_key": "sk-attack-tier-fake-provider",
        "openai_model": EMBED_MODEL,
        "embed_timeout_s": 2.0,
        **overrides,
    }
    return make_settings(pg, **values)


@pytest.fixture(scope="session")
def fake_embeddings() -> Iterator[FakeEmbeddings]:
    provider = FakeEmbeddings(free_port())
    provider.up()
    yield provider
    provider.down()


@pytest.fixture(scope="module")
def new_user(pg: embedded.Embedded) -> Iterator[Callable[..., User]]:
    """Makes users (with every scope unless told); at the end of the module they are deleted
    (sessions, versions, usage and keys cascade), as the owner."""
    made: list[str] = []

    def make(rt: Runtime, scopes: tuple[str, ...] = ("read", "write", "delete")) -> User:
        user = make_user(rt, "attack", scopes)
        made.append(user.id)
        return user

    yield make
    if made:
        with psycopg.connect(pg.owner_url, autocommit=True) as conn:
            conn.execute("DELETE FROM users WHERE id = ANY(%s::uuid[])", (made,))


@pytest.fixture(scope="module")
def attack_runtime(pg: embedded.Embedded, fake_embeddings: FakeEmbeddings) -> Iterator[Runtime]:
    rt = open_runtime(attack_settings(pg, fake_embeddings.base_url))
    yield rt
    rt.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not HYPOTHESIS:
        terminalreporter.write_line("attack tier: fuzzers NOT RUN (no hypothesis)", red=True)
    if GENERATED:
        total = sum(GENERATED.values())
        terminalreporter.write_line(
            f"attack tier: {total} generated requests "
            + ", ".join(f"{name} {n}" for name, n in sorted(GENERATED.items()))
        )
    for name, outcomes in sorted(OUTCOMES.items()):
        seen = ", ".join(f"{k} {n}" for k, n in sorted(outcomes.items(), key=lambda kv: -kv[1]))
        terminalreporter.write_line(f"  {name}: {seen}")


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> Iterator[injection.Hook]:
    """Every serving-path transaction in this process, wrapped by an injection hook (issue 34)."""
    armed = injection.Hook()
    real = pool.Database.in_tenant

    def in_tenant(self: pool.Database, at: pool.Tenant, work: Any, *, idempotent: bool) -> Any:
        return real(self, at, armed.wrap(work), idempotent=idempotent)

    monkeypatch.setattr(pool.Database, "in_tenant", in_tenant)
    yield armed
