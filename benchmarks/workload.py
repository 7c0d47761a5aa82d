"""What is measured: the MCP calls, and three ways to make them.

HTTP      a plain JSON-RPC POST to /mcp with `Authorization: Bearer` (stateless: no
          initialize), over a kept-alive connection to the server process;
Mangum    the same body as an API Gateway v2 event through Mangum(SessionVaultApp(rt)),
          in this process, as the MCP Lambda function runs it;
Vault     the Vault method behind the tool, called directly (no HTTP, no auth, no audit).
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2

from .common import ROOT

PROTOCOL_VERSION = "2025-06-18"


@dataclass
class Call:
    label: str
    method: str  # tools/call | tools/list | prompts/list
    tool: str = ""
    args: Callable[[int], dict[str, Any]] = field(default=lambda i: {})
    who: str = "reader"  # whose key: reader (a seeded tenant) or writer (a fresh user)

    def params(self, i: int) -> dict[str, Any] | None:
        if self.method != "tools/call":
            return None
        return {"name": self.tool, "arguments": self.args(i)}

    def body(self, i: int) -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": self.method}
        if (params := self.params(i)) is not None:
            message["params"] = params
        return json.dumps(message).encode()


def calls(name: str, repo: str, tag: str) -> list[Call]:
    """The measured calls; save_session creates `tag`-<i> and delete_session removes it, so the
    two must run in this order with the same indexes."""
    plan = [f"step {k}: extract the {k}th service" for k in range(6)]

    def save(i: int) -> dict[str, Any]:
        return {
            "name": f"{tag}-{i}",
            "repo": "github.com/bench/app",
            "summary": f"Split checkout into services, pass {i}; payment intents next",
            "plan": plan,
            "decisions": [{"decision": "use Stripe intents", "reason": "SCA compliance"}],
            "todos": ["write payment tests"],
            "client": "bench",
        }

    return [
        Call("save_session", "tools/call", "save_session", save, who="writer"),
        Call("load_session by name", "tools/call", "load_session", lambda i: {"name": name}),
        Call("load_session latest for repo", "tools/call", "load_session", lambda i: {"repo": repo}),
        Call("list_sessions", "tools/call", "list_sessions", lambda i: {}),
        Call(
            "search_sessions",
            "tools/call",
            "search_sessions",
            lambda i: {"query": "fix the flaky payment webhook tests"},
        ),
        Call(
            "delete_session", "tools/call", "delete_session", lambda i: {"name": f"{tag}-{i}"}, who="writer"
        ),
        Call("tools/list", "tools/list"),
        Call("prompts/list", "prompts/list"),
    ]


def mcp_headers(key: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
    }


class CallFailed(RuntimeError):
    pass


def check_reply(status: int, body: bytes, call: Call) -> dict[str, Any]:
    """The JSON-RPC result, or CallFailed naming what went wrong."""
    text = body.decode("utf-8", "replace")
    if status != 200:
        raise CallFailed(f"{call.label}: HTTP {status}: {text[:200]}")
    if text.startswith("event:") or text.startswith("data:"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    message = json.loads(text)
    if "error" in message:
        raise CallFailed(f"{call.label}: {message['error']}")
    result = message["result"]
    if result.get("isError"):
        raise CallFailed(f"{call.label}: {result.get('content')}")
    return result


# --- HTTP ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """benchmarks/serve.py on a free port, against `database_url`."""

    def __init__(self, database_url: str, master_key: str, audit_salt: str, **more_env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        env = {
            **os.environ,
            **more_env,
            "BENCH_DATABASE_URL": database_url,
            "BENCH_MASTER_KEY": master_key,
            "BENCH_AUDIT_SALT": audit_salt,
        }
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115  (closed in __exit__)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.serve", str(self.port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,  # one JSON log line per request: not what we measure
            stderr=self.errors,
        )

    def __enter__(self) -> ServerProcess:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.errors.seek(0)
                raise RuntimeError(f"server exited: {self.errors.read().decode()[-2000:]}")
            try:
                if httpx2.get(f"http://127.0.0.1:{self.port}/health", timeout=1).status_code == 200:
                    return self
            except httpx2.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server did not start within 120 s")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.errors.close()


class HttpCaller:
    def __init__(self, url: str, keys: dict[str, str]) -> None:
        self.url = url
        self.keys = keys
        self.client = httpx2.Client(timeout=30)

    def __call__(self, call: Call, i: int) -> dict[str, Any]:
        reply = self.client.post(self.url, content=call.body(i), headers=mcp_headers(self.keys[call.who]))
        return check_reply(reply.status_code, reply.content, call)

    def close(self) -> None:
        self.client.close()


# --- Mangum (the Lambda path, in process) -----------------------------------------------------


class LambdaContext:
    function_name = "sessionvault-bench"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:sessionvault-bench"
    aws_request_id = "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def http_event(body: bytes, key: str) -> dict[str, Any]:
    """An API Gateway HTTP API payload-format-2.0 event (as in tests/lambda/conftest.py)."""
    host = "abc123.execute-api.us-east-1.amazonaws.com"
    return {
        "version": "2.0",
        "routeKey": "POST /mcp",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": {
            "host": host,
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": PROTOCOL_VERSION,
            "user-agent": "claude-code/2.0",
            "content-length": str(len(body)),
            "x-forwarded-for": "203.0.113.9",
            "x-forwarded-proto": "https",
            "x-forwarded-port": "443",
            "authorization": f"Bearer {key}",
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": host,
            "domainPrefix": "abc123",
            "http": {
                "method": "POST",
                "path": "/mcp",
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.9",
                "userAgent": "claude-code/2.0",
            },
            "requestId": f"req-{os.urandom(6).hex()}",
            "routeKey": "POST /mcp",
            "stage": "$default",
            "time": "30/Nov/2026:09:30:00 +0000",
            "timeEpoch": 1795944600000,
        },
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }


class MangumCaller:
    """Mangum(SessionVaultApp(rt), lifespan="off"), as functions/mcp/handler.py builds it."""

    def __init__(self, rt: Any, keys: dict[str, str]) -> None:
        from mangum import Mangum

        from sessionvault.server.app import SessionVaultApp

        self.handler = Mangum(SessionVaultApp(rt), lifespan="off")
        self.keys = keys
        self.context = LambdaContext()

    def __call__(self, call: Call, i: int) -> dict[str, Any]:
        response = self.handler(http_event(call.body(i), self.keys[call.who]), self.context)
        body = response.get("body") or ""
        raw = base64.b64decode(body) if response.get("isBase64Encoded") else body.encode()
        return check_reply(response["statusCode"], raw, call)


# --- Vault, directly --------------------------------------------------------------------------

_VAULT = {
    "save_session": ("save", "SaveArgs"),
    "load_session": ("load", "LoadArgs"),
    "list_sessions": ("list", "ListArgs"),
    "search_sessions": ("search", "SearchArgs"),
    "delete_session": ("delete", "DeleteArgs"),
}


class VaultCaller:
    """rt.vault.<method>(principal, args): the server-side work of a tool, nothing around it."""

    def __init__(self, rt: Any, principals: dict[str, Any]) -> None:
        self.rt = rt
        self.principals = principals

    def supports(self, call: Call) -> bool:
        return call.tool in _VAULT

    def __call__(self, call: Call, i: int) -> Any:
        from sessionvault.core import records

        method, model = _VAULT[call.tool]
        args = records.parse(getattr(records, model), call.args(i))
        return getattr(self.rt.vault, method)(self.principals[call.who], args)


def principal(owner_url: str, user_id: str) -> Any:
    import psycopg
    from psycopg.rows import dict_row

    from sessionvault.core.keys import WrappedKey
    from sessionvault.service.principal import Principal

    with psycopg.connect(owner_url, row_factory=dict_row) as conn:
        row = conn.execute("SELECT dek_wrapped, key_id FROM users WHERE id = %s", (user_id,)).fetchone()
    return Principal(user_id, WrappedKey.from_row(row))
