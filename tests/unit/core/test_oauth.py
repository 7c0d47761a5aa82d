"""OAuth rules without a database: token shapes, URLs from the base, redirect URI policy,
PKCE S256, scopes and the consent CSRF value."""

from __future__ import annotations

import base64
import hashlib

import pytest

from sessionvault import settings
from sessionvault.core import oauth


def test_tokens_carry_256_random_bits_after_a_prefix_that_names_them():
    access, refresh = oauth.new_access_token(), oauth.new_refresh_token()
    assert access.startswith("sv_at_") and refresh.startswith("sv_rt_")
    for token in (access.removeprefix("sv_at_"), refresh.removeprefix("sv_rt_"), oauth.new_code()):
        assert len(token) == 43 and len(base64.urlsafe_b64decode(token + "=")) == 32
    assert len({oauth.new_access_token() for _ in range(100)}) == 100
    assert oauth.looks_like_access_token(access) and not oauth.looks_like_access_token(refresh)
    assert not oauth.looks_like_access_token("sv_at_short")


def test_only_a_sha256_of_a_token_is_what_gets_stored():
    token = oauth.new_access_token()
    assert oauth.digest(token) == hashlib.sha256(token.encode()).digest()


def test_pkce_s256_matches_rfc_7636_appendix_b():
    assert (
        oauth.s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    )


@pytest.mark.parametrize(
    ("base", "metadata", "path"),
    [
        (
            "https://vault.example.com",
            "https://vault.example.com/.well-known/oauth-protected-resource/mcp",
            "",
        ),
        (
            "https://x.example/prod",
            "https://x.example/.well-known/oauth-protected-resource/prod/mcp",
            "/prod",
        ),
        ("http://127.0.0.1:8765", "http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp", ""),
    ],
)
def test_the_resource_and_its_metadata_url_follow_rfc_9728(base, metadata, path):
    assert oauth.resource_url(base) == base + "/mcp"
    assert oauth.resource_metadata_url(base) == metadata
    assert oauth.www_authenticate(base) == f'Bearer resource_metadata="{metadata}"'
    assert oauth.base_path(base) == path


@pytest.mark.parametrize(
    "uri",
    [
        "https://claude.ai/api/mcp/auth_callback",
        "https://chatgpt.com/connector_platform_oauth_redirect",
        "http://127.0.0.1:33418/callback",
        "http://localhost:3000/cb",
        "http://[::1]:8080/cb",
    ],
)
def test_https_and_loopback_http_redirect_uris_may_be_registered(uri):
    assert oauth.redirect_uri_problem(uri) is None


@pytest.mark.parametrize(
    "uri",
    [
        "http://example.com/cb",
        "http://10.0.0.1/cb",
        "http://localhost.attacker.example/cb",
        "ftp://example.com/cb",
        "javascript:alert(1)",
        "https:///nohost",
        "https://user:pw@example.com/cb",
        "https://example.com/cb#frag",
        "https://example.com/" + "a" * 600,
        "http://127.0.0.1:notaport/cb",
    ],
)
def test_other_redirect_uris_are_refused(uri):
    assert oauth.redirect_uri_problem(uri)


def test_a_public_url_is_https_or_loopback_http_without_query():
    assert settings.public_url_problem("https://vault.example.com") is None
    assert settings.public_url_problem("http://127.0.0.1:8765") is None
    assert settings.public_url_problem("http://vault.example.com")
    assert settings.public_url_problem("https://vault.example.com/?x=1")


def test_scopes_are_read_in_canonical_order_and_unknown_ones_refused():
    assert oauth.parse_scopes("delete read") == ("read", "delete")
    assert oauth.parse_scopes(None) == () and oauth.parse_scopes("") == ()
    assert oauth.parse_scopes("read admin") is None


def test_the_csrf_value_is_bound_to_its_request_and_to_the_server_secret():
    token = oauth.csrf_token("salt-one-0123456789", "request-a")
    assert oauth.csrf_ok("salt-one-0123456789", "request-a", token)
    assert not oauth.csrf_ok("salt-one-0123456789", "request-b", token)
    assert not oauth.csrf_ok("salt-two-0123456789", "request-a", token)
    assert not oauth.csrf_ok("salt-one-0123456789", "request-a", "")
    assert not oauth.csrf_ok("salt-one-0123456789", "request-a", "é" * 43)


@pytest.mark.parametrize(
    ("asked", "registered", "expected"),
    [
        (None, "read", ("read",)),  # none asked: the registered scope (it used to be the key's)
        ("", "write read", ("read", "write")),
        (None, None, ()),  # nothing registered either: the approving key's
        ("read write delete", "read", ("read",)),  # narrowed to what was registered
        ("delete", "read", None),  # nothing in common
        ("read admin", None, None),  # unknown
        ("delete read", None, ("read", "delete")),
    ],
)
def test_a_request_is_for_the_asked_scopes_within_the_registered_else_the_registered(
    asked, registered, expected
):
    assert oauth.request_scopes(asked, registered) == expected


@pytest.mark.parametrize(
    "url",
    ["https://app.example/oauth/client.json", "https://app.example:8443/c?v=1", "https://[2001:db8::1]/c"],
)
def test_an_https_url_with_a_path_may_name_a_metadata_document(url):
    assert oauth.is_metadata_document_url(url)
    assert oauth.metadata_document_url_problem(url) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://app.example/client.json",
        "https://app.example",
        "https://app.example/",
        "https://app.example/a/./client.json",
        "https://app.example/a/../client.json",
        "https://u:p@app.example/client.json",
        "https://app.example/client.json#f",
        "https://app.example/client json",
        "https://app.example/cliënt.json",
        "https://app.example;x/client.json",
        "https://app.example/" + "a" * 600,
    ],
)
def test_other_urls_cannot_name_a_metadata_document(url):
    assert oauth.metadata_document_url_problem(url)


@pytest.mark.parametrize(
    ("cache_control", "ttl"),
    [
        (None, 3600),
        ("public, max-age=600", 600),
        ('max-age="900"', 900),
        ("max-age=5", 60),  # at least a minute
        ("max-age=99999999999999999", 86400),  # at most a day
        ("no-store", 60),
        ("no-cache, max-age=600", 60),
        ("max-age=soon", 3600),
    ],
)
def test_a_metadata_document_is_cached_for_its_max_age_within_bounds(cache_control, ttl):
    assert oauth.document_ttl(cache_control) == ttl
