"""The web view's session cookie and CSRF tokens: sealed, bound to the key's digest, expiring,
refused when changed, under another secret or past their time; cookies parsed as browsers send
them; the cookie attributes by scheme and path."""

from __future__ import annotations

import hashlib

import pytest

from sessionvault.server.web import cookie as web

SECRET = "s" * 32
DIGEST = hashlib.sha256(b"sv_live_example").digest()


def test_a_sealed_session_opens_to_the_same_key_digest_until_it_expires() -> None:
    value, made = web.seal(SECRET, DIGEST, now=1_000)
    opened = web.open_session(SECRET, value, now=1_000 + web.LIFETIME_S - 1)
    assert opened == made and opened.key_hash == DIGEST
    assert web.open_session(SECRET, value, now=1_000 + web.LIFETIME_S) is None  # expired
    assert DIGEST.hex() not in value and b"sv_live" not in value.encode()  # sealed, not signed


def test_a_changed_foreign_or_malformed_cookie_opens_to_nothing() -> None:
    value, _ = web.seal(SECRET, DIGEST, now=1_000)
    flipped = value[:10] + ("A" if value[10] != "A" else "B") + value[11:]
    for bad in (flipped, value[:-1], value + "A", "", "x" * 300, "é" * 10, "!!!!", value.upper()):
        assert web.open_session(SECRET, bad, now=1_000) is None, bad
    assert web.open_session("t" * 32, value, now=1_000) is None  # another server's secret


def test_every_sign_in_is_a_new_session_with_its_own_csrf_token() -> None:
    a_value, a = web.seal(SECRET, DIGEST)
    b_value, b = web.seal(SECRET, DIGEST)
    assert a_value != b_value and a.sid != b.sid
    token = web.csrf(SECRET, a)
    assert web.csrf_ok(SECRET, a, token) and not web.csrf_ok(SECRET, b, token)
    assert not web.csrf_ok(SECRET, a, "") and not web.csrf_ok(SECRET, a, token[:-1])
    assert not web.csrf_ok("t" * 32, a, token)


def test_the_sign_in_token_is_bound_to_its_own_pre_sign_in_cookie() -> None:
    pre, other = web.new_pre(), web.new_pre()
    token = web.signin_csrf(SECRET, pre)
    assert web.signin_csrf_ok(SECRET, pre, token)
    assert not web.signin_csrf_ok(SECRET, other, token)
    assert not web.signin_csrf_ok(SECRET, "", web.signin_csrf(SECRET, ""))  # no cookie, no sign-in
    assert not web.signin_csrf_ok(SECRET, "short", web.signin_csrf(SECRET, "short"))
    # a sign-in token is not a session token, nor the consent page's
    _, session = web.seal(SECRET, DIGEST)
    assert token != web.csrf(SECRET, session)


@pytest.mark.parametrize(
    ("base", "session", "attributes"),
    [
        ("http://127.0.0.1:8765", "sv_web", "Path=/; Max-Age=60; HttpOnly; SameSite=Strict"),
        (
            "https://vault.example.com",
            "__Host-sv_web",
            "Path=/; Max-Age=60; HttpOnly; SameSite=Strict; Secure",
        ),
        ("https://example.com/sv", "sv_web", "Path=/sv; Max-Age=60; HttpOnly; SameSite=Strict; Secure"),
    ],
)
def test_cookie_names_and_attributes_follow_the_public_url(base: str, session: str, attributes: str) -> None:
    cookies = web.Cookies.for_base(base)
    assert cookies.session == session
    assert cookies.set(cookies.session, "v", 60) == f"{session}=v; {attributes}"
    assert "Max-Age=0" in cookies.clear(cookies.session)


def test_cookies_are_read_from_every_cookie_header_first_value_first() -> None:
    raw = [
        (b"cookie", b"a=1; sv_web=first"),
        (b"Cookie", b'sv_web=second; b="2"'),
        (b"x-other", b"sv_web=no"),
        (b"cookie", b"junk; =empty; c="),
    ]
    assert web.parse_cookies(raw) == {"a": "1", "sv_web": "first", "b": "2", "c": ""}
