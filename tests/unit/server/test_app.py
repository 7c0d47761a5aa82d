"""The ASGI app's edge, driven with hand-made ASGI messages and a runtime whose database fails
the test if anything touches it: what is refused before the body is read, what the catch-all
answers, and that every request ends in exactly one log line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from sessionvault import telemetry
from sessionvault.errors import Refused
from sessionvault.runtime import Runtime
from sessionvault.server.admission import guard
from sessionvault.server.app import SessionVaultApp
from sessionvault.server.mcp import endpoint as mcp_endpoint
from sessionvault.server.routes import Surfaces
from sessionvault.settings import Settings

pytestmark = pytest.mark.anyio

PING = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'


class NoDatabase:
    """Any use of the database is a failure of the test (and, in the app, would be a 500)."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the database was used: .{name}")


def make_app(**values: object) -> SessionVaultApp:
    settings = Settings.from_env(
        {}, check=False, database_url="postgresql://nowhere", audit_salt="s" * 16, **values
    )
    return SessionVaultApp(Runtime(settings, NoDatabase(), None, None))  # type: ignore[arg-type]


class Body:
    """An ASGI `receive` holding one body; counts how often it was asked."""

    def __init__(self, body: bytes = PING) -> None:
        self.body, self.taken = body, 0

    async def __call__(self) -> dict[str, Any]:
        self.taken += 1
        if self.taken > 1:
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": self.body, "more_body": False}


class Reply:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def starts(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["type"] == "http.response.start"]

    @property
    def status(self) -> int:
        (start,) = self.starts
        return int(start["status"])

    @property
    def headers(self) -> dict[str, str]:
        return {k.decode(): v.decode() for k, v in self.starts[0]["headers"]}

    def json(self) -> Any:
        return json.loads(
            b"".join(m.get("body", b"") for m in self.messages if m["type"] == "http.response.body")
        )


def http(
    method: str = "POST", path: str = "/mcp", client: str = "127.0.0.1", **headers: str | None
) -> dict[str, Any]:
    values: dict[str, str | None] = {
        "host": "127.0.0.1:8765",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    values.update({k.replace("_", "-"): v for k, v in headers.items()})
    raw = [(k.encode(), v.encode("latin-1")) for k, v in values.items() if v is not None]
    return {"type": "http", "method": method, "path": path, "headers": raw, "client": (client, 50000)}


@pytest.fixture
def logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[telemetry.RequestLog]]:
    emitted: list[telemetry.RequestLog] = []
    monkeypatch.setattr(telemetry, "emit", emitted.append)
    yield emitted


async def call(app: SessionVaultApp, scope: dict[str, Any], body: Body | None = None) -> Reply:
    reply = Reply()
    await app(scope, body or Body(), reply)
    return reply


# --- refused before the body is read ----------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "status", "check"),
    [
        ({"content_type": "text/plain"}, 415, "content_type"),
        ({"content_type": None}, 415, "content_type"),
        ({"host": "attacker.example:8765"}, 421, "host"),
        ({"host": None}, 421, "host"),
        ({"origin": "https://attacker.example"}, 403, "origin"),
        ({"origin": "null"}, 403, "origin"),
    ],
)
async def test_bad_headers_are_refused_before_the_body_and_the_database(
    logs: list[telemetry.RequestLog], headers: dict[str, str | None], status: int, check: str
) -> None:
    body = Body()
    reply = await call(make_app(), http(authorization="Bearer sv_live_" + "A" * 32, **headers), body)
    assert reply.status == status and set(reply.json()) == {"error"}
    assert body.taken == 0  # not one byte of the body was read
    (log,) = logs
    assert (log.status, log.edge_check, log.auth_reason, log.failure) == (status, check, "", "")


async def test_a_loopback_origin_gets_past_the_edge(logs: list[telemetry.RequestLog]) -> None:
    reply = await call(make_app(), http(origin="http://localhost:6274"))
    assert reply.status == 401  # no key: refused by authentication, not by the Origin check
    assert logs[0].auth_reason == "missing" and logs[0].edge_check == ""


async def test_behind_a_gateway_any_host_passes_but_a_browser_origin_does_not(
    logs: list[telemetry.RequestLog],
) -> None:
    app = make_app(allowed_hosts=("*",))
    assert (await call(app, http(host="abc.execute-api.us-east-1.amazonaws.com"))).status == 401
    assert (await call(app, http(origin="http://127.0.0.1:8765"))).status == 403


# --- malformed bodies -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{not json",
        b"[" * 100_000,
        b"1" * 5000,
        b'"\xff"',
        b"\x00",
        b'{"a": 1}{"b": 2}',
    ],
)
async def test_a_malformed_body_is_a_400_whoever_sends_it(
    logs: list[telemetry.RequestLog], body: bytes
) -> None:
    reply = await call(make_app(), http(content_length=str(len(body))), Body(body))
    assert reply.status == 400 and reply.json()["error"]["code"] == -32700
    assert logs[0].status == 400 and logs[0].failure == ""


async def test_a_malformed_content_length_is_a_400(logs: list[telemetry.RequestLog]) -> None:
    assert (await call(make_app(), http(content_length="12abc"))).status == 400


# --- failed authentications per client address (local mode) -----------------------------------


async def test_an_address_that_keeps_failing_is_refused_with_429_before_its_body(
    logs: list[telemetry.RequestLog],
) -> None:
    app = make_app(auth_failures_per_minute=3)
    bad = http(authorization="Basic dXNlcjpwYXNz")
    assert [(await call(app, bad)).status for _ in range(3)] == [401] * 3
    body = Body()
    limited = await call(app, bad, body)
    assert limited.status == 429 and body.taken == 0
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert limited.json()["retry_after"] == int(limited.headers["retry-after"])
    assert logs[-1].edge_check == "auth_failures" and logs[-1].error_class == "rate_limit"
    assert [log.auth_reason for log in logs] == ["missing"] * 3 + [""]
    # Another address is not affected; the limited one stays limited, with or without a key.
    assert (await call(app, http(client="10.1.2.3"))).status == 401
    assert (await call(app, http(authorization="Bearer sv_live_" + "Z" * 32))).status == 429


async def test_refusals_before_authentication_do_not_count_as_failed_authentications(
    logs: list[telemetry.RequestLog],
) -> None:
    app = make_app(auth_failures_per_minute=1)
    for _ in range(5):
        await call(app, http(content_type="text/plain"))
        await call(app, http(), Body(b"{oops"))
    assert (await call(app, http())).status == 401  # the first failed authentication


async def test_behind_a_gateway_failures_are_not_limited_per_process(
    logs: list[telemetry.RequestLog],
) -> None:
    app = make_app(allowed_hosts=("*",), auth_failures_per_minute=1)
    assert app.failures is None
    assert {(await call(app, http())).status for _ in range(20)} == {401}


# --- the catch-all ----------------------------------------------------------------------------


async def test_an_unexpected_exception_is_a_generic_500_with_its_type_in_the_log(
    logs: list[telemetry.RequestLog], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: object) -> None:
        raise KeyError("secret-detail-from-the-message")

    monkeypatch.setattr(mcp_endpoint, "read_json", broken)
    reply = await call(make_app(), http())
    assert reply.status == 500 and reply.json() == {"error": "internal error"}
    (log,) = logs
    assert (log.status, log.error_class, log.failure) == (500, "internal", "KeyError")
    assert "secret-detail" not in json.dumps(log.fields())


async def test_an_exception_after_the_answer_began_sends_nothing_more(
    logs: list[telemetry.RequestLog], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def half(self: Surfaces, scope: object, receive: object, send: Any, *rest: object) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("boom")

    monkeypatch.setattr(Surfaces, "serve_mcp", half)
    reply = await call(make_app(), http())
    assert len(reply.starts) == 1 and reply.status == 200
    assert (logs[0].status, logs[0].failure) == (200, "RuntimeError")


async def test_a_refusal_raised_again_and_again_does_not_grow_a_traceback(
    logs: list[telemetry.RequestLog], monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = Refused(415, b"{}", "validation")
    monkeypatch.setattr(guard, "refusal", lambda check: shared)
    app = make_app()
    for _ in range(3):
        await call(app, http(content_type="text/plain"))
    assert shared.__traceback__ is None


# --- one log line per request -----------------------------------------------------------------


async def test_other_methods_and_paths_are_answered_and_logged(logs: list[telemetry.RequestLog]) -> None:
    app = make_app()
    get = await call(app, http(method="GET", authorization="Bearer sv_live_" + "A" * 32))
    assert get.status == 405 and get.headers["allow"] == "POST"
    assert (await call(app, http(path="/admin"))).status == 404
    assert [(log.status, log.error_class) for log in logs] == [(405, "validation"), (404, "validation")]


async def test_a_get_or_head_without_credentials_gets_the_challenge(logs: list[telemetry.RequestLog]) -> None:
    """Clients probe /mcp before they have a token to find the resource metadata (RFC 9728)."""
    app = make_app()
    for method in ("GET", "HEAD"):
        reply = await call(app, http(method=method))
        assert reply.status == 401
        assert reply.headers["www-authenticate"].startswith('Bearer resource_metadata="http://127.0.0.1')
    assert [(log.status, log.auth_reason) for log in logs] == [(401, "missing"), (401, "missing")]


async def test_health_answers_without_a_log_line(logs: list[telemetry.RequestLog]) -> None:
    reply = await call(make_app(), http(method="GET", path="/health"))
    assert reply.status == 200 and reply.json() == {"ok": True} and logs == []


async def test_a_websocket_is_closed(logs: list[telemetry.RequestLog]) -> None:
    reply = Reply()
    await make_app()({"type": "websocket", "path": "/mcp", "headers": []}, Body(), reply)
    assert reply.messages == [{"type": "websocket.close", "code": 1008}]


# --- the edge on Starlette: every path, one Host, one credential -----------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/mcp"),
        ("POST", "/mcp/"),
        ("GET", "/api/v1/sessions"),
        ("GET", "/"),
        ("GET", "/web/keys"),
        ("POST", "/token"),
        ("GET", "/.well-known/oauth-authorization-server"),
        ("GET", "/nowhere"),
    ],
)
async def test_a_foreign_or_second_host_is_refused_on_every_path_before_its_surface(
    logs: list[telemetry.RequestLog], method: str, path: str
) -> None:
    app = make_app()
    key = "Bearer sv_live_" + "A" * 32
    foreign = await call(app, http(method, path, host="attacker.example", authorization=key))
    scope = http(method, path, authorization=key)
    scope["headers"].append((b"host", b"attacker.example"))  # a second Host after a good one
    second = await call(app, scope)
    assert foreign.status == second.status == 421
    assert [(log.status, log.edge_check, log.tool) for log in logs] == [(421, "host", "")] * 2


async def test_a_second_authorization_header_is_refused_as_any_bad_credential(
    logs: list[telemetry.RequestLog],
) -> None:
    """The SDK and Starlette read the first of a repeated header; the edge reads them all, and a
    request with two credentials gets the same 401 as one with none (no database asked)."""
    scope = http(authorization="Bearer sv_live_" + "A" * 32)
    scope["headers"].append((b"authorization", b"Bearer sv_live_" + b"B" * 32))
    reply = await call(make_app(), scope)
    missing = await call(make_app(), http())
    assert reply.status == missing.status == 401
    assert reply.json() == missing.json() and reply.headers == missing.headers
    assert [log.auth_reason for log in logs] == ["duplicate", "missing"]


async def test_the_route_table_sends_each_path_to_its_surface(logs: list[telemetry.RequestLog]) -> None:
    """Unknown paths are the JSON 404; a trailing slash is the same path (no redirect); the web
    view's own paths answer HTML; the public URL's path is taken off when the gateway passes it."""
    app = make_app(public_url="http://127.0.0.1:8765/vault")
    nowhere = await call(app, http("GET", "/vault/nowhere"))
    assert nowhere.status == 404 and nowhere.json() == {"error": "not found"}
    slash = await call(app, http("GET", "/vault/mcp/"))
    assert slash.status == 401  # /mcp's GET without a key: the 401 that names the metadata
    assert "/.well-known/oauth-protected-resource/vault/mcp" in slash.headers["www-authenticate"]
    page = await call(app, http("GET", "/vault/web/no-such-page"))
    assert page.status == 404 and page.headers["content-type"].startswith("text/html")
