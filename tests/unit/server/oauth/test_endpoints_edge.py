"""The OAuth endpoints' edge, driven with hand-made ASGI messages and a runtime whose database
fails the test if anything touches it: the Origin and Content-Type checks /mcp has (on
/register, /token and /revoke), form bodies that cannot be parsed (400s, never 500s), and the
body read deadline (408) that holds for every path."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

import pytest

from sessionvault import telemetry
from sessionvault.server import edge

from ..test_app import Body, Reply, http, logs, make_app

__all__ = ["logs"]  # the fixture, imported for its use below

pytestmark = pytest.mark.anyio

FORM = "application/x-www-form-urlencoded"
FOREIGN = ("https://attacker.example", "null", "http://attacker.example:8765", "http://127.0.0.1.evil:1")
NOT_FORM = ("text/plain", "application/json", "multipart/form-data; boundary=x", "", None)
NOT_JSON = ("text/plain", FORM, "multipart/form-data; boundary=x", "application/jsonp", "", None)


async def post(path: str, body: bytes, app: Any = None, **headers: str | None) -> tuple[Reply, Body]:
    received = Body(body)
    reply = Reply()
    await (app or make_app())(http(path=path, **headers), received, reply)
    return reply, received


def text(reply: Reply) -> str:
    return b"".join(m.get("body", b"") for m in reply.messages if m["type"] == "http.response.body").decode()


def fields(n: int, name: str = "f") -> bytes:
    return urlencode([(f"{name}{i}", "v") for i in range(n)]).encode()


def multipart(parts: list[tuple[str, str]], boundary: str = "b0undary") -> bytes:
    lines = []
    for name, value in parts:
        lines += [f"--{boundary}", f'Content-Disposition: form-data; name="{name}"', "", value]
    return ("\r\n".join([*lines, f"--{boundary}--", ""])).encode()


# --- issue 6: the OAuth endpoints get /mcp's Origin and Content-Type checks ------------------


REGISTRATION = b'{"redirect_uris": ["http://127.0.0.1:1/cb"], "client_name": "drive-by"}'


@pytest.mark.parametrize("origin", FOREIGN)
@pytest.mark.parametrize("path", ["/register", "/token", "/revoke"])
async def test_a_foreign_origin_is_refused_before_the_body_and_the_database(
    logs: list[telemetry.RequestLog], path: str, origin: str
) -> None:
    content_type = "application/json" if path == "/register" else FORM
    reply, body = await post(path, REGISTRATION, content_type=content_type, origin=origin)
    assert reply.status == 403 and reply.json() == {"error": "invalid Origin header"}
    assert body.taken == 0
    (log,) = logs
    assert (log.status, log.edge_check, log.error_class, log.failure) == (403, "origin", "auth", "")


async def test_the_drive_by_registration_a_page_could_send_is_refused(
    logs: list[telemetry.RequestLog],
) -> None:
    """The one POST a web page may send to 127.0.0.1 without asking first: text/plain. It used
    to register a client (and use up the local registration cap); now it never reaches the SDK."""
    for origin in ("https://attacker.example", None):
        reply, body = await post("/register", REGISTRATION, content_type="text/plain", origin=origin)
        assert reply.status == (403 if origin else 415) and body.taken == 0
    assert [log.edge_check for log in logs] == ["origin", "content_type"]


@pytest.mark.parametrize("content_type", NOT_JSON)
async def test_register_takes_json_only(logs: list[telemetry.RequestLog], content_type: str | None) -> None:
    reply, body = await post("/register", REGISTRATION, content_type=content_type)
    assert reply.status == 415 and reply.json() == {"error": "Content-Type must be application/json"}
    assert body.taken == 0 and logs[0].edge_check == "content_type"


@pytest.mark.parametrize("content_type", NOT_FORM)
@pytest.mark.parametrize("path", ["/token", "/revoke"])
async def test_token_and_revoke_take_a_urlencoded_form_only(
    logs: list[telemetry.RequestLog], path: str, content_type: str | None
) -> None:
    reply, body = await post(path, b"grant_type=x", content_type=content_type)
    assert reply.status == 415
    assert reply.json() == {"error": "Content-Type must be application/x-www-form-urlencoded"}
    assert body.taken == 0 and logs[0].edge_check == "content_type"


async def test_two_content_types_are_refused_whichever_comes_first(logs: list[telemetry.RequestLog]) -> None:
    """Our check and Starlette's parser must read the same header: refuse the ambiguous case."""
    scope = http(path="/token", content_type=FORM)
    scope["headers"].insert(0, (b"content-type", b"multipart/form-data"))
    reply = Reply()
    await make_app()(scope, Body(b"grant_type=x"), reply)
    assert reply.status == 415


async def test_two_origins_are_refused_if_either_is_foreign(logs: list[telemetry.RequestLog]) -> None:
    scope = http(path="/register", origin="http://127.0.0.1:8765")
    scope["headers"].insert(0, (b"origin", b"https://attacker.example"))
    reply = Reply()
    await make_app()(scope, Body(REGISTRATION), reply)
    assert reply.status == 403


@pytest.mark.parametrize("origin", ["http://127.0.0.1:6274", "http://localhost:3000", None])
async def test_a_loopback_origin_or_none_gets_through_locally(
    logs: list[telemetry.RequestLog], origin: str | None
) -> None:
    # Not JSON the SDK accepts: its 400 comes before any database work.
    reply, body = await post("/register", b"{}", content_type="application/json", origin=origin)
    assert reply.status == 400 and reply.json()["error"] == "invalid_client_metadata"
    assert body.taken == 1


async def test_behind_a_gateway_no_browser_origin_gets_through(logs: list[telemetry.RequestLog]) -> None:
    app = make_app(allowed_hosts=("*",))
    for path in ("/register", "/token", "/revoke"):
        reply, _ = await post(path, b"{}", app, origin="http://127.0.0.1:8765", content_type=FORM)
        assert reply.status == 403


async def test_consent_keeps_its_own_same_origin_check(logs: list[telemetry.RequestLog]) -> None:
    reply, _ = await post("/consent", b"request=x", content_type=FORM, origin="https://attacker.example")
    assert reply.status == 403 and logs[0].edge_check == "origin"
    # Its own origin passes the Origin check (and then fails CSRF: no database either way).
    reply, _ = await post("/consent", b"request=x", content_type=FORM, origin="http://127.0.0.1:8765")
    assert reply.status == 400 and "expired" in text(reply)


# --- issue 4: form bodies that cannot be parsed are 400s, never 500s -------------------------


@pytest.mark.parametrize("path", ["/token", "/revoke"])
@pytest.mark.parametrize("content_type", ["multipart/form-data", "multipart/form-data; charset=utf-8"])
async def test_multipart_without_a_boundary_to_token_or_revoke_is_refused_not_crashed_on(
    logs: list[telemetry.RequestLog], path: str, content_type: str
) -> None:
    """It used to be a 500 (python-multipart's "Missing boundary" raised through Starlette).
    These endpoints take a urlencoded form only (RFC 6749 section 4.1.3, RFC 7009 section 2.1)."""
    reply, _ = await post(path, b"\x00", content_type=content_type)
    assert reply.status == 415
    assert reply.json() == {"error": "Content-Type must be application/x-www-form-urlencoded"}
    assert (logs[0].failure, logs[0].error_class) == ("", "validation")


BROKEN_MULTIPART = [
    ("multipart/form-data", b"\x00"),
    ("multipart/form-data; boundary=x", b"garbage"),
    ("multipart/form-data; boundary=x", b"--y\r\n\r\n"),
    ("multipart/form-data; boundary=x", b"--x\r\nbad header line\r\n\r\nv\r\n--x--\r\n"),
    ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data\r\n\r\nv\r\n--x--\r\n"),
    ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data; name=a; filename=f\r\n\r\n"),
    ("multipart/form-data; boundary=" + "x" * 5000, b"--x\r\n"),
    ("multipart/form-data; boundary=x", multipart([(f"f{i}", "v") for i in range(1001)], "x")),
]


@pytest.mark.parametrize(("content_type", "body"), BROKEN_MULTIPART)
async def test_a_broken_multipart_form_is_a_400_on_consent_and_authorize(
    logs: list[telemetry.RequestLog], content_type: str, body: bytes
) -> None:
    consent, _ = await post("/consent", body, content_type=content_type)
    assert consent.status == 400 and consent.headers["content-type"].startswith("text/html")
    assert "This form could not be read" in text(consent)
    assert consent.headers["x-frame-options"] == "DENY"
    authorize, _ = await post("/authorize", body, content_type=content_type)
    assert authorize.status == 400 and "This form could not be read" in text(authorize)
    assert authorize.headers["content-type"].startswith("text/html")
    assert [(log.status, log.error_class, log.failure) for log in logs] == [(400, "validation", "")] * 2


@pytest.mark.parametrize("n", [1_001, 5_000])
async def test_a_form_of_more_than_a_thousand_fields_is_a_400(
    logs: list[telemetry.RequestLog], n: int
) -> None:
    """/consent used to answer a 500: Starlette's limit (1,000 fields) raised through it."""
    for path in ("/consent", "/authorize"):
        page, _ = await post(path, fields(n), content_type=FORM)
        assert page.status == 400 and "This form could not be read" in text(page)
    for path in ("/token", "/revoke"):
        reply, _ = await post(path, fields(n), content_type=FORM)
        assert reply.status == 400, path
        assert reply.json() == {"error": "invalid_request", "error_description": "the form could not be read"}
    assert {(log.status, log.failure) for log in logs} == {(400, "")}


async def test_a_form_the_endpoints_can_use_is_not_refused(logs: list[telemetry.RequestLog]) -> None:
    # /consent with a form of a few fields reaches its CSRF check (and fails it: no database).
    reply, _ = await post("/consent", fields(8), content_type=FORM)
    assert reply.status == 400 and "expired" in text(reply)
    reply, _ = await post(
        "/consent", multipart([("request", "x")]), content_type="multipart/form-data; boundary=b0undary"
    )
    assert reply.status == 400 and "expired" in text(reply)


async def test_a_huge_field_name_is_no_crash(logs: list[telemetry.RequestLog]) -> None:
    name = "n" * 60_000
    for path in ("/consent", "/authorize"):
        for content_type, body in (
            (FORM, f"{name}=v".encode()),
            ("multipart/form-data; boundary=b0undary", multipart([(name, "v")])),
        ):
            reply, _ = await post(path, body, content_type=content_type)
            assert 400 <= reply.status < 500, (path, content_type, reply.status)
    assert all(log.failure == "" for log in logs)


# --- issue 12: a body that never arrives is a 408, and the connection is closed --------------


class Stalled:
    """An ASGI `receive` that hands out part of a body, then never anything more."""

    def __init__(self, first: bytes = b'{"jsonrpc": ') -> None:
        self.first, self.taken = first, 0

    async def __call__(self) -> dict[str, Any]:
        self.taken += 1
        if self.taken == 1:
            return {"type": "http.request", "body": self.first, "more_body": True}
        await asyncio.Event().wait()  # a client that went quiet
        raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/mcp", "application/json"), ("/register", "application/json"), ("/token", FORM), ("/consent", FORM)],
)
async def test_a_body_that_stops_arriving_is_a_408_that_closes_the_connection(
    logs: list[telemetry.RequestLog], monkeypatch: pytest.MonkeyPatch, path: str, content_type: str
) -> None:
    monkeypatch.setattr(edge, "BODY_DEADLINE_S", 0.2)
    reply = Reply()
    loop = asyncio.get_running_loop()
    started = loop.time()
    scope = http(path=path, content_type=content_type, content_length="100")
    await asyncio.wait_for(make_app()(scope, Stalled(), reply), timeout=5)
    assert 0.2 <= loop.time() - started < 2
    assert reply.status == 408 and reply.json() == {"error": "request body not received in time"}
    assert reply.headers["connection"] == "close"
    (log,) = logs
    assert (log.status, log.error_class, log.failure) == (408, "timeout", "")
