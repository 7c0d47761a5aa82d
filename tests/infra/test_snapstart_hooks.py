"""The MCP handler under SnapStart, driven the way tests/lambda drive the handlers (moto for KMS and
Secrets Manager, the embedded PostgreSQL, API Gateway v2 events through Mangum), with the Lambda
runtime's `snapshot_restore_py` replaced by a fake that records the hooks the handler registers.

What a snapshot must not hold is a live database connection: every copy restored from it would
share the one socket. So: the before-snapshot hook closes the pool (its connections are gone on
the server too), the after-restore hook gives the copy a new pool, and a request then succeeds.
"""

from __future__ import annotations

import ast
import importlib
import secrets
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

# `lambda` is a keyword, so no `from tests.lambda.conftest import ...`: the module itself.
_lambda = importlib.import_module("tests.lambda.conftest")
aws = _lambda.aws  # fixture: a moto account with the stack's key and secrets, the environment
LambdaContext = _lambda.LambdaContext
body_json = _lambda.body_json
http_event = _lambda.http_event
load_handler = _lambda.load_handler
rpc = _lambda.rpc

ROOT = Path(__file__).resolve().parents[2]
MCP_HEADERS = {"mcp-protocol-version": "2025-06-18"}
Hook = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class FakeSnapshotRestore(types.ModuleType):
    """snapshot_restore_py as the Lambda Python runtime provides it: the two registration
    functions (usable as decorators too). It runs before-snapshot hooks in the reverse order
    of registration and after-restore hooks in the order of registration."""

    def __init__(self) -> None:
        super().__init__("snapshot_restore_py")
        self.before: list[Hook] = []
        self.after: list[Hook] = []

    def register_before_snapshot(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.before.append((func, args, kwargs))
        return func

    def register_after_restore(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.after.append((func, args, kwargs))
        return func

    def snapshot(self) -> None:
        for func, args, kwargs in reversed(self.before):
            func(*args, **kwargs)

    def restore(self) -> None:
        for func, args, kwargs in self.after:
            func(*args, **kwargs)


@pytest.fixture
def runtime_hooks(monkeypatch: pytest.MonkeyPatch) -> FakeSnapshotRestore:
    fake = FakeSnapshotRestore()
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", fake)
    return fake


def new_key(admin: Any) -> str:
    user = admin.handler({"action": "create_user", "name": f"u-{secrets.token_hex(4)}"}, LambdaContext())
    key = admin.handler({"action": "create_key", "user_id": user["user_id"], "label": "t"}, LambdaContext())
    return str(key["key"])


def invoke(mcp: Any, body: str, key: str) -> dict[str, Any]:
    return mcp.handler(http_event(body, key=key, **MCP_HEADERS), LambdaContext())


def backend_alive(owner_url: str, pid: int, *, wait_gone_s: float = 0.0) -> bool:
    """Whether the server still has backend `pid`; with wait_gone_s, give it that long to exit
    (a backend leaves pg_stat_activity a moment after its client closed the socket)."""
    deadline = time.monotonic() + wait_gone_s
    with psycopg.connect(owner_url, autocommit=True) as conn:
        while True:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
            if not (row and row[0]):
                return False
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.05)


def test_snapshot_holds_no_connection_and_a_restored_copy_serves(aws, pg, runtime_hooks):
    admin = load_handler("admin")
    mcp = load_handler("mcp")  # init: what SnapStart would snapshot
    assert [len(runtime_hooks.before), len(runtime_hooks.after)] == [1, 1]
    key = new_key(admin)

    # Init opened the pool; no request has run, so no data key was unwrapped into memory.
    pool = mcp.RUNTIME.db.pool
    with pool.connection() as conn:
        pid = conn.info.backend_pid
    assert backend_alive(pg.owner_url, pid)
    assert len(mcp.RUNTIME.keys) == 0

    runtime_hooks.snapshot()
    assert pool.closed
    assert not backend_alive(pg.owner_url, pid, wait_gone_s=5), "a connection went into the snapshot"

    runtime_hooks.restore()
    fresh = mcp.RUNTIME.db.pool
    assert fresh is not pool and not fresh.closed and pool.closed
    assert (fresh.min_size, fresh.max_size, fresh.timeout) == (pool.min_size, pool.max_size, pool.timeout)

    init = rpc(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    )
    save = rpc("tools/call", {"name": "save_session", "arguments": {"name": "snap", "summary": "restored"}})
    load = rpc("tools/call", {"name": "load_session", "arguments": {"name": "snap"}})
    responses = [invoke(mcp, body, key) for body in (init, save, load, rpc("tools/list"))]
    assert [r["statusCode"] for r in responses] == [200] * 4
    loaded = body_json(responses[2])["result"]["structuredContent"]
    assert (loaded["name"], loaded["summary"]) == ("snap", "restored")
    with fresh.connection() as conn:
        assert conn.info.backend_pid != pid


def test_without_the_runtime_module_the_handler_registers_nothing_and_serves(aws, monkeypatch):
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # import fails: a laptop, python3.11
    admin = load_handler("admin")
    mcp = load_handler("mcp")
    assert mcp.snapshot_restore_py is None
    assert invoke(mcp, rpc("tools/list"), new_key(admin))["statusCode"] == 200


# ---------------------------------------------------------------- uniqueness after restore


def lambda_side_files() -> list[Path]:
    package = ROOT / "shared" / "sessionvault"
    files = [*ROOT.glob("functions/*/handler.py")]
    files += [p for p in package.rglob("*.py") if p.relative_to(package).parts[0] not in ("local", "cli")]
    return files


def test_the_lambda_side_draws_randomness_from_the_kernel_only():
    """Restored copies share the snapshot's memory: a userspace generator seeded at init
    (`random`, numpy's) would hand every copy the same sequence. Nonces, data keys, API keys
    and ids come from os.urandom / secrets / uuid4, which read the kernel's generator at the
    moment they are called (docs/snapstart.md)."""
    offenders = []
    for path in lambda_side_files():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            if any(n == "random" or n.startswith("numpy.random") for n in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, "userspace PRNG on the Lambda side: " + ", ".join(offenders)
    crypto = (ROOT / "shared" / "sessionvault" / "core" / "crypto.py").read_text()
    assert "os.urandom(NONCE_BYTES)" in crypto, "the AES-GCM nonce must come from the kernel per call"
