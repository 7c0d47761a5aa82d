"""Shared fixtures: one real embedded PostgreSQL + pgvector per test run, reached as the
non-superuser app role so that RLS is really in force."""

from __future__ import annotations

import base64
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import psycopg
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from sessionvault.core import apikeys
from sessionvault.core.keys import WrappedKey
from sessionvault.db.pool import Database
from sessionvault.local.host import embedded
from sessionvault.runtime import Runtime, open_runtime
from sessionvault.server.app import SessionVaultApp
from sessionvault.service import accounts
from sessionvault.service.principal import Principal
from sessionvault.settings import Settings


class _CurrentStdout:
    """Whatever sys.stdout is at the moment of writing: pytest swaps it per test (and capfd
    per fixture), while the structured logger is built once per process."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


@pytest.fixture(autouse=True)
def _log_to_the_current_stdout() -> None:
    for handler in logging.getLogger("sessionvault").handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.stream = _CurrentStdout()  # not setStream: it flushes the old, maybe closed, one


@pytest.fixture
def isolated_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Git that ignores the developer's config (a global `url.<x>.insteadOf` would rewrite
    remotes) and stops at tmp_path (a parent repo would make "not a repo" cases find it)."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    return tmp_path


@pytest.fixture
def http() -> Iterator[httpx2.Client]:
    """A plain HTTP client for tests that speak to a server thread directly."""
    with httpx2.Client(timeout=30) as client:
        yield client


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def pg() -> Iterator[embedded.Embedded]:
    # Not pytest's tmp_path: that parent is 0700 and, as root, postgres runs as its own user.
    home = Path(tempfile.mkdtemp(prefix="sessionvault-test-"))
    db = embedded.start(home)
    ADMIN_DB.append(Database(db.admin_url, max_size=4))
    OWNER_URL.append(db.owner_url)
    yield db
    OWNER_URL.pop()
    ADMIN_DB.pop().close()
    embedded.stop(home)
    shutil.rmtree(home, ignore_errors=True)


ADMIN_DB: list[Database] = []  # the admin role's pool, while the `pg` fixture is up
OWNER_URL: list[str] = []  # the owner's URL, likewise: tests mint tenant proofs with it
MASTER_KEY = base64.b64encode(os.urandom(32)).decode()  # one per run: every local runtime shares it


def make_settings(pg: embedded.Embedded, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": pg.app_url,
        "master_key": MASTER_KEY,
        "audit_salt": "test-salt-0123456789abcdef",
        "embeddings": "none",
        "rate_per_minute": 10_000,
        "rate_per_day": 100_000,
        # Every test registers from 127.0.0.1: the caps are tested on their own.
        "oauth_registrations_per_hour": 10_000,
        "oauth_registrations_per_address": 10_000,
        # ... and fails authentication from 127.0.0.1 on purpose (identical 401s, bad cookies):
        # the per-address limit is tested on its own servers (tests/e2e/test_edge_hardening.py),
        # never decided by which tests happened to run before in the same minute.
        "auth_failures_per_minute": 10**6,
    }
    values.update(overrides)
    return Settings.from_env({}, **values)


@pytest.fixture(scope="session")
def runtime(pg: embedded.Embedded) -> Iterator[Runtime]:
    rt = open_runtime(make_settings(pg))
    yield rt
    rt.close()


@pytest.fixture(scope="session")
def maint_rt(pg: embedded.Embedded) -> Iterator[Runtime]:
    """The maintenance function's own role (as in Lambda), no embedding model."""
    rt = open_runtime(make_settings(pg, database_url=pg.maint_url), pool_size=2)
    yield rt
    rt.close()


@pytest.fixture(scope="session")
def local_runtime(pg: embedded.Embedded) -> Iterator[Runtime]:
    """The real offline model (all-MiniLM-L6-v2), loaded once for the run."""
    rt = open_runtime(make_settings(pg, embeddings="local"))
    yield rt
    rt.close()


@pytest.fixture(scope="module")
def admin_rt(pg: embedded.Embedded) -> Iterator[Runtime]:
    """A runtime on the admin role (users, keys, re-keys), as the admin function has it."""
    rt = open_runtime(make_settings(pg, database_url=pg.admin_url), pool_size=2)
    yield rt
    rt.close()


@pytest.fixture(scope="session")
def maint_runtime(pg: embedded.Embedded, local_runtime: Runtime) -> Iterator[Runtime]:
    """The maintenance jobs' own role (prune, re-embed) with the local model, as in Lambda."""
    rt = open_runtime(make_settings(pg, embeddings="local", database_url=pg.maint_url), pool_size=2)
    yield rt
    rt.close()


def admin_db() -> Database:
    """Users and keys are made as the admin role: the app role cannot create them."""
    return ADMIN_DB[-1]


@dataclass
class User:
    id: str
    key: str
    principal: Principal


def make_user(
    rt: Runtime, label: str = "test", scopes: tuple[str, ...] = ("read", "write", "delete")
) -> User:
    name = f"user-{os.urandom(6).hex()}"
    admin = admin_db()
    user_id = accounts.create_user(admin, rt.keys.provider, name)
    key, _ = accounts.create_key(admin, user_id, label, scopes)
    with admin.identity() as conn:
        row = conn.execute("SELECT dek_wrapped, key_id FROM users WHERE id = %s", (user_id,)).fetchone()
    return User(user_id, key, Principal(user_id, WrappedKey.from_row(row), proof=proof_for(user_id)))


def proof_for(user_id: str, owner_url: str = "") -> str:
    """The database's proof of `user_id` (migration 0020), minted as the owner (an admission
    mints it for a real call, after it verified the key): what lets a test's Principal work on
    the serving role directly, for the proof's 60 s, with no audit row or rate-limit count."""
    with psycopg.connect(owner_url or OWNER_URL[-1]) as conn:
        row = conn.execute("SELECT sessionvault_mint_proof(%s)", (user_id,)).fetchone()
    assert row is not None
    return str(row[0])


def hook_key(user: User, label: str = "hooks") -> str:
    """A key of the hooks' kind for `user` (read, checkpoint: what `connect --hooks` makes)."""
    return accounts.create_key(admin_db(), user.id, label, apikeys.HOOK_SCOPES)[0]


@pytest.fixture
def user(runtime: Runtime) -> User:
    return make_user(runtime)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerThread:
    """The real ASGI app under uvicorn on a free loopback port."""

    def __init__(self, rt: Runtime) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        config = uvicorn.Config(SessionVaultApp(rt), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def server(runtime: Runtime) -> Iterator[ServerThread]:
    with ServerThread(runtime) as s:
        yield s


@pytest.fixture(scope="session")
def local_server(local_runtime: Runtime) -> Iterator[ServerThread]:
    with ServerThread(local_runtime) as s:
        yield s


def mcp_client(url: str, key: str) -> Client:
    """The official MCP Python client over real HTTP, carrying the bearer key."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http))
