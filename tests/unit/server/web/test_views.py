"""The web view's edge, through the whole ASGI app with a database that fails the test if it is
touched: what is answered or refused before any database work (the sign-in page, a wrong Host,
Content-Type or Origin, a forged sign-in token, a cookie that does not open, unknown paths and
methods), that a refused form's body is never read, and one log line per request."""

from __future__ import annotations

import re

import pytest

from sessionvault import telemetry
from sessionvault.server.web import cookie as web_session

from ..test_app import Body, call, http, make_app

pytestmark = pytest.mark.anyio


@pytest.fixture
def logs(monkeypatch: pytest.MonkeyPatch) -> list[telemetry.RequestLog]:
    emitted: list[telemetry.RequestLog] = []
    monkeypatch.setattr(telemetry, "emit", emitted.append)
    return emitted


FORM = "application/x-www-form-urlencoded"
OWN = "http://127.0.0.1:8765"


def page(method: str = "GET", path: str = "/", **headers: str | None) -> dict[str, object]:
    return http(method, path, content_type=headers.pop("content_type", None), **headers)


async def test_the_sign_in_page_needs_no_database(logs: list[telemetry.RequestLog]) -> None:
    reply = await call(make_app(), page())
    assert reply.status == 200
    body = b"".join(m.get("body", b"") for m in reply.messages if m["type"] == "http.response.body").decode()
    assert 'name="api_key"' in body and "<script" not in body
    headers = reply.headers
    assert headers["content-type"] == "text/html; charset=utf-8" and headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert (
        headers["set-cookie"].startswith("sv_web_signin=")
        and "HttpOnly; SameSite=Strict" in headers["set-cookie"]
    )
    (log,) = logs
    assert (log.tool, log.status, log.admitted) == ("web/sessions", 200, False)


@pytest.mark.parametrize(
    ("headers", "status", "check"),
    [
        ({"content_type": "text/plain", "origin": OWN}, 415, "content_type"),
        ({"content_type": None, "origin": OWN}, 415, "content_type"),
        ({"content_type": FORM, "origin": "https://attacker.example"}, 403, "origin"),
        ({"content_type": FORM, "origin": "null"}, 403, "origin"),
        ({"content_type": FORM, "origin": OWN, "sec_fetch_site": "cross-site"}, 403, "origin"),
        ({"content_type": FORM, "origin": OWN, "sec_fetch_site": "same-site"}, 403, "origin"),
    ],
)
async def test_a_form_from_elsewhere_is_refused_before_its_body(
    logs: list[telemetry.RequestLog], headers: dict[str, str | None], status: int, check: str
) -> None:
    for path in ("/web/signin", "/web/signout", "/web/keys/revoke"):
        body = Body(b"csrf=x&api_key=sv_live_" + b"A" * 32)
        reply = await call(make_app(), page("POST", path, **headers), body)
        assert reply.status == status and body.taken == 0, path
        assert reply.headers["content-type"].startswith("text/html")
    assert {(log.status, log.edge_check) for log in logs} == {(status, check)}


async def test_a_forged_sign_in_token_is_refused_without_the_database(
    logs: list[telemetry.RequestLog],
) -> None:
    app = make_app()
    pre = web_session.new_pre()
    good = web_session.signin_csrf("s" * 16, pre)
    for cookie, token in (
        (None, good),
        (f"sv_web_signin={pre}", "forged"),
        (f"sv_web_signin={web_session.new_pre()}", good),
    ):
        body = Body(f"csrf={token}&api_key=sv_live_{'A' * 32}".encode())
        reply = await call(
            app, page("POST", "/web/signin", content_type=FORM, origin=OWN, cookie=cookie), body
        )
        assert reply.status == 403
    assert all(log.error_class == "validation" and not log.admitted for log in logs)


async def test_a_cookie_that_does_not_open_is_a_signed_out_browser(logs: list[telemetry.RequestLog]) -> None:
    value, _ = web_session.seal("another secret, not this server's", b"\x00" * 32)
    for path in ("/web/keys", "/web/session"):
        reply = await call(make_app(), page(path=path, cookie=f"sv_web={value}"))
        assert reply.status == 303 and reply.headers["location"] == "/"
        assert "Max-Age=0" in reply.headers["set-cookie"]
    home = await call(make_app(), page(cookie=f"sv_web={value}"))
    assert home.status == 200
    text = b"".join(m.get("body", b"") for m in home.messages if m["type"] == "http.response.body").decode()
    assert "Your sign-in has ended" in text


async def test_unknown_paths_methods_and_hosts(logs: list[telemetry.RequestLog]) -> None:
    app = make_app()
    assert (await call(app, page(path="/web/nope"))).status == 404
    wrong = await call(app, page("PUT", "/web/keys"))
    assert wrong.status == 405 and wrong.headers["allow"] == "GET"
    assert (await call(app, page("POST", "/"))).status == 405
    assert (await call(app, page(host="attacker.example:8765"))).status == 421
    assert [log.status for log in logs] == [404, 405, 405, 421]


async def test_under_a_public_path_links_and_cookies_start_there(logs: list[telemetry.RequestLog]) -> None:
    app = make_app(public_url="https://vault.example.com/sv", allowed_hosts=("*",))
    reply = await call(app, page(path="/sv/", host="vault.example.com"))
    assert reply.status == 200
    text = b"".join(m.get("body", b"") for m in reply.messages if m["type"] == "http.response.body").decode()
    assert 'action="/sv/web/signin"' in text
    cookie = reply.headers["set-cookie"]
    assert re.match(
        r"sv_web_signin=[\w-]+; Path=/sv; Max-Age=900; HttpOnly; SameSite=Strict; Secure$", cookie
    )
