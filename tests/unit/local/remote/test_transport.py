"""The API client's HTTP: the URL it calls, the key's rule, and each refusal as the project's
own error with the server's message."""

from __future__ import annotations

import pytest

from sessionvault.errors import (
    ConfigError,
    ProviderUnavailable,
    QuotaExceeded,
    RateLimited,
    ScopeMissing,
    Unavailable,
    UpstreamError,
    ValidationFailed,
)
from sessionvault.local.remote import api_client, transport
from sessionvault.local.remote.transport import Api

from .fake_api import Canned, Fake, error

# --------------------------------------------------------------------------- where and how


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("http://127.0.0.1:8765/mcp", "http://127.0.0.1:8765"),
        ("http://localhost:8765/mcp/", "http://localhost:8765"),
        (
            "https://abc.execute-api.eu-west-1.amazonaws.com/mcp",
            "https://abc.execute-api.eu-west-1.amazonaws.com",
        ),
        ("https://example.com/vault/mcp", "https://example.com/vault"),
        ("https://example.com/vault/api/v1", "https://example.com/vault"),
        ("https://example.com", "https://example.com"),
    ],
)
def test_the_api_is_beside_the_mcp_url(url: str, root: str) -> None:
    assert transport.api_root(url) == root


def test_no_key_over_plain_http_to_another_host_and_none_without_a_key() -> None:
    with pytest.raises(ConfigError, match="plain http"):
        Api.at("http://example.com/mcp", "sv_live_x")
    with pytest.raises(ConfigError, match="no API key"):
        Api.at("http://127.0.0.1:8765/mcp", "  ")
    assert "sv_live_secret" not in repr(Api.at("http://127.0.0.1:1/mcp", "sv_live_secret"))


def test_each_call_sends_its_method_path_query_and_key(fake: Fake) -> None:
    api = fake.reply(Canned(body=b'{"sessions": [], "next_cursor": ""}'))
    api_client.list_sessions(api, repo="github.com/acme/a", limit=5)
    api_client.get_session(api, "auto/codex/x", version=2)
    api_client.session_versions(api, "a b")
    api_client.delete_session(api, "plan")
    api_client.search(api, "jwt", limit=3)
    api_client.list_handoffs(api, state="open")
    sent = [(s.method, s.path, s.query) for s in fake.seen]
    assert sent == [
        ("GET", "/api/v1/sessions", {"repo": "github.com/acme/a", "limit": "5"}),
        ("GET", "/api/v1/session", {"name": "auto/codex/x", "version": "2", "mode": "normal"}),
        ("GET", "/api/v1/session/versions", {"name": "a b"}),
        ("DELETE", "/api/v1/session", {"name": "plan"}),
        ("GET", "/api/v1/search", {"q": "jwt", "limit": "3"}),
        ("GET", "/api/v1/handoffs", {"state": "open", "limit": "50"}),
    ]
    assert all(s.headers["authorization"] == "Bearer sv_live_test" for s in fake.seen)


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("reply", "raised", "message"),
    [
        (
            Canned(400, error("validation", "invalid arguments: name")),
            ValidationFailed,
            "invalid arguments: name",
        ),
        (Canned(404, error("validation", "no session named 'x'")), ValidationFailed, "no session named 'x'"),
        (Canned(403, error("scope", "needs the 'delete' scope")), ScopeMissing, "'delete' scope"),
        (Canned(409, error("quota", "storage quota reached")), QuotaExceeded, "storage quota reached"),
        (
            Canned(503, error("provider", "semantic search is unavailable")),
            ProviderUnavailable,
            "unavailable",
        ),
        (Canned(401, b'{"error": "unauthorized"}'), ConfigError, r"refused the API key \(401\)"),
        (Canned(429, b'{"error": "rate_limited"}', {"Retry-After": "7"}), RateLimited, "try again in 7 s"),
        (
            Canned(503, b'{"error": "temporarily unavailable, try again"}'),
            Unavailable,
            "HTTP 503: temporarily",
        ),
        (Canned(500, b"<html>oops</html>"), Unavailable, "HTTP 500: HTTP 500"),
        (
            Canned(415, b'{"error": "Content-Type must be application/x-ndjson"}'),
            UpstreamError,
            "Content-Type",
        ),
    ],
)
def test_a_refusal_is_the_projects_error_with_the_servers_message(
    fake: Fake, reply: Canned, raised: type[Exception], message: str
) -> None:
    with pytest.raises(raised, match=message):
        api_client.list_sessions(fake.reply(reply))


def test_a_429_carries_its_retry_after(fake: Fake) -> None:
    with pytest.raises(RateLimited) as caught:
        api_client.list_sessions(fake.reply(Canned(429, b"{}", {"Retry-After": "12"})))
    assert caught.value.retry_after == 12


def test_an_answer_that_is_not_a_json_object_is_said_to_be_so(fake: Fake) -> None:
    with pytest.raises(UpstreamError, match="not a JSON object"):
        api_client.list_sessions(fake.reply(Canned(body=b"[1, 2]")))


def test_nothing_listening_is_unavailable_with_the_local_hint() -> None:
    with pytest.raises(Unavailable, match=r"cannot reach http://127.0.0.1:9.*sessionvault dev"):
        api_client.list_sessions(Api.at("http://127.0.0.1:9/mcp", "sv_live_x"))
