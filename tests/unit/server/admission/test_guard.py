"""What stops a request before its body is read: the Host, Origin and Content-Type checks, and
the per-address limit on failed authentications. Pure: no server, no database, a fake clock."""

from __future__ import annotations

import json

import pytest
from starlette.datastructures import Headers

from sessionvault.core import apikeys
from sessionvault.server.admission import guard
from sessionvault.server.admission.guard import (
    LOOPBACK_ORIGINS,
    AuthFailureLimit,
    HeaderPolicy,
    host_allowed,
    is_local,
    key_digest,
    matches,
    refusal,
    too_many_failures,
)
from sessionvault.server.edge import is_json
from sessionvault.settings import Settings

LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOCAL = HeaderPolicy(LOCAL_HOSTS, LOOPBACK_ORIGINS)
GATEWAY = HeaderPolicy(("*",))


def settings(**values: object) -> Settings:
    return Settings.from_env({}, check=False, database_url="postgresql://x", **values)


def request(**headers: str | None) -> Headers:
    """The headers of a good local request, with `headers` replacing or adding some."""
    base: dict[str, str | None] = {"host": "127.0.0.1:8765", "content-type": "application/json"}
    base.update({k.replace("_", "-"): v for k, v in headers.items()})
    return Headers(raw=[(k.encode(), v.encode("latin-1")) for k, v in base.items() if v is not None])


# --- matches: the SDK's pattern meaning -------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "127.0.0.1:1", "localhost:3000", "[::1]:8080"])
def test_a_loopback_host_with_a_port_matches_the_local_patterns(host: str) -> None:
    assert matches(host, LOCAL_HOSTS)


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:8765",  # a rebound DNS name pointing at 127.0.0.1
        "127.0.0.1",  # no port: the pattern asks for one
        "127.0.0.1:",  # an empty port
        "127.0.0.1:80x",  # not a number
        "127.0.0.1.evil.example:80",
        "localhost.evil.example:80",
        "127.0.0.10:80",
        "",
    ],
)
def test_anything_else_does_not(host: str) -> None:
    assert not matches(host, LOCAL_HOSTS)


def test_matching_ignores_case_and_surrounding_space() -> None:
    assert matches(" LocalHost:8000 ", LOCAL_HOSTS)
    assert matches("api.example.com", ["API.example.com"])


def test_an_exact_pattern_matches_only_itself() -> None:
    assert matches("api.example.com", ["api.example.com"])
    assert not matches("api.example.com:443", ["api.example.com"])


def test_a_star_matches_anything() -> None:
    assert matches("abc123.execute-api.us-east-1.amazonaws.com", ["*"])
    assert matches("", ["*"])


@pytest.mark.parametrize("host", ["[", "", "a b", 'x"y', "host/path", "user@host", "h:port", "[::1"])
def test_a_host_header_that_is_no_host_is_refused_even_where_any_host_is_allowed(host: str) -> None:
    """Found by the attack tier: behind the gateway ("*") a Host of "[" reached the OAuth
    challenge, whose URL is built from the Host, and crashed it (a 500)."""
    assert not host_allowed(host, ["*"])
    assert GATEWAY.check(request(host=host)) == "host"


@pytest.mark.parametrize(
    "host", ["abc.execute-api.eu-west-1.amazonaws.com", "Vault.Example.com:443", "[::1]:8765"]
)
def test_a_well_formed_host_is_allowed_where_any_host_is(host: str) -> None:
    assert host_allowed(host, ["*"])


def test_no_patterns_match_nothing() -> None:
    assert not matches("127.0.0.1:8765", [])


# --- is_json ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["application/json", "application/json; charset=utf-8", "Application/JSON", " application/json ;x=y"],
)
def test_json_with_or_without_parameters_is_json(value: str) -> None:
    assert is_json(value)


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "text/plain",  # the POST a web page may send without asking first
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonp",
        "application/json-seq",
        "application/vnd.api+json",
    ],
)
def test_every_other_media_type_is_not(value: str | None) -> None:
    assert not is_json(value)


# --- HeaderPolicy -----------------------------------------------------------------------------


def test_a_good_local_request_passes() -> None:
    assert LOCAL.check(request()) is None


@pytest.mark.parametrize("origin", ["http://127.0.0.1:6274", "http://localhost:3000", "http://[::1]:8765"])
def test_a_loopback_origin_passes_locally(origin: str) -> None:
    assert LOCAL.check(request(origin=origin)) is None


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "http://evil.example:8765",
        "null",  # sandboxed frames and file:// pages
        "https://127.0.0.1:8765",  # the loopback origins are http only
        "http://127.0.0.1.evil.example:80",
        "http://localhost",  # no port
    ],
)
def test_any_other_origin_is_refused_locally(origin: str) -> None:
    assert LOCAL.check(request(origin=origin)) == "origin"


def test_an_empty_origin_counts_as_none() -> None:
    assert LOCAL.check(request(origin="")) is None


@pytest.mark.parametrize("host", ["evil.example:8765", "127.0.0.1", None])
def test_a_foreign_or_missing_host_is_refused_locally(host: str | None) -> None:
    assert LOCAL.check(request(host=host)) == "host"


@pytest.mark.parametrize("content_type", ["text/plain", None, "application/x-www-form-urlencoded"])
def test_a_body_that_does_not_say_json_is_refused(content_type: str | None) -> None:
    assert LOCAL.check(request(content_type=content_type)) == "content_type"
    assert GATEWAY.check(request(content_type=content_type)) == "content_type"


def test_host_is_checked_first_then_origin_then_content_type() -> None:
    everything_wrong = request(
        host="evil.example:1", origin="https://evil.example", content_type="text/plain"
    )
    assert LOCAL.check(everything_wrong) == "host"
    assert LOCAL.check(request(origin="https://evil.example", content_type="text/plain")) == "origin"


def test_behind_a_gateway_any_host_passes_but_no_browser_origin_does() -> None:
    assert GATEWAY.check(request(host="abc123.execute-api.us-east-1.amazonaws.com")) is None
    assert GATEWAY.check(request(origin="https://evil.example")) == "origin"
    assert GATEWAY.check(request(origin="http://127.0.0.1:8765")) == "origin"


def test_the_policy_follows_the_settings() -> None:
    local = settings()
    assert is_local(local)
    assert HeaderPolicy.from_settings(local) == HeaderPolicy(tuple(local.allowed_hosts), LOOPBACK_ORIGINS)
    gateway = settings(allowed_hosts=("*",))
    assert not is_local(gateway)
    assert HeaderPolicy.from_settings(gateway) == HeaderPolicy(("*",), ())


# --- the refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("check", "status", "error_class"),
    [("host", 421, "auth"), ("origin", 403, "auth"), ("content_type", 415, "validation")],
)
def test_each_check_has_its_status(check: str, status: int, error_class: str) -> None:
    answer = refusal(check)  # type: ignore[arg-type]
    assert (answer.status, answer.error_class) == (status, error_class)
    assert set(json.loads(answer.body)) == {"error"}


def test_each_refusal_is_a_new_exception() -> None:
    assert refusal("host") is not refusal("host")


def test_too_many_failures_says_when_to_come_back() -> None:
    answer = too_many_failures(17)
    assert (answer.status, answer.error_class, answer.headers) == (429, "rate_limit", {"Retry-After": "17"})
    assert json.loads(answer.body)["retry_after"] == 17


# --- key_digest -------------------------------------------------------------------------------


def test_the_digest_is_the_stored_form_of_a_bearer_key() -> None:
    key = apikeys.generate()
    assert key_digest(f"Bearer {key}") == apikeys.digest(key)
    assert key_digest(f"bearer   {key} ") == apikeys.digest(key)


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer   ", "Basic dXNlcjpwYXNz"])
def test_no_bearer_key_no_digest(header: str | None) -> None:
    assert key_digest(header) is None


# --- AuthFailureLimit -------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_an_address_is_free_until_it_has_failed_the_limit(clock: Clock) -> None:
    limit = AuthFailureLimit(3, clock=clock)
    for _ in range(2):
        limit.failed("10.0.0.1")
        assert limit.retry_after("10.0.0.1") == 0
    limit.failed("10.0.0.1")
    assert limit.retry_after("10.0.0.1") == 60


def test_other_addresses_are_not_affected(clock: Clock) -> None:
    limit = AuthFailureLimit(1, clock=clock)
    limit.failed("10.0.0.1")
    assert limit.retry_after("10.0.0.1") > 0
    assert limit.retry_after("10.0.0.2") == 0


def test_the_window_slides_and_retry_after_names_the_oldest_failure(clock: Clock) -> None:
    limit = AuthFailureLimit(2, clock=clock)
    limit.failed("a")
    clock.now += 20
    limit.failed("a")
    assert limit.retry_after("a") == 40  # the first failure leaves the window in 40 s
    clock.now += 39.5
    assert limit.retry_after("a") == 1  # rounded up, never 0 while limited
    clock.now += 0.5
    assert limit.retry_after("a") == 0
    limit.failed("a")
    assert limit.retry_after("a") == 20  # now the second failure is the oldest that counts


def test_an_address_whose_failures_all_expired_is_forgotten(clock: Clock) -> None:
    limit = AuthFailureLimit(5, clock=clock)
    limit.failed("a")
    assert len(limit) == 1
    clock.now += 61
    assert limit.retry_after("a") == 0
    assert len(limit) == 0


def test_memory_stays_bounded_under_a_flood_of_addresses(clock: Clock) -> None:
    limit = AuthFailureLimit(30, max_clients=100, clock=clock)
    for i in range(10_000):
        limit.failed(f"10.0.{i // 256}.{i % 256}")
    assert len(limit) == 100
    assert limit.retry_after("10.0.0.0") == 0  # the least recently failing were forgotten first
    for _ in range(1000):
        limit.failed("one")
    assert len(limit._failures["one"]) == 30  # only the newest failures of an address are kept


def test_the_most_recently_failing_address_is_kept_when_others_are_evicted(clock: Clock) -> None:
    limit = AuthFailureLimit(2, max_clients=2, clock=clock)
    limit.failed("old")
    limit.failed("new")
    limit.failed("old")  # "old" is now the most recent
    limit.failed("third")
    assert limit.retry_after("old") == 60 and len(limit) == 2


def test_a_recently_admitted_key_is_known_for_a_while(clock: Clock) -> None:
    limit = AuthFailureLimit(1, key_ttl_s=600, clock=clock)
    key = apikeys.digest(apikeys.generate())
    assert not limit.known(key) and not limit.known(None)
    limit.admitted(key)
    limit.admitted(None)  # no key, nothing to remember
    assert limit.known(key)
    clock.now += 599
    assert limit.known(key)
    clock.now += 1
    assert not limit.known(key)


def test_known_keys_are_bounded(clock: Clock) -> None:
    limit = AuthFailureLimit(1, max_keys=3, clock=clock)
    keys = [bytes([i]) * 32 for i in range(5)]
    for key in keys:
        limit.admitted(key)
    assert [limit.known(k) for k in keys] == [False, False, True, True, True]


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError):
        AuthFailureLimit(0)


@pytest.mark.parametrize(
    ("name", "first", "second", "check"),
    [
        ("host", "evil.example", "127.0.0.1:8765", "host"),
        ("host", "127.0.0.1:8765", "127.0.0.1:8765", "host"),
        ("origin", "https://evil.example", "http://127.0.0.1:8765", "origin"),
        ("content-type", "text/plain", "application/json", "content_type"),
    ],
)
def test_a_second_host_origin_or_content_type_does_not_slip_past(
    name: str, first: str, second: str, check: str
) -> None:
    """Found by review: the SDK's own check reads the first of each header where the edge's
    dict kept the last, so such a request was admitted (a flight, an audit row), then refused
    by the SDK, which logged the caller's header verbatim."""
    raw = [(k, v) for k, v in request().raw if k.decode() != name]
    raw += [(name.encode(), first.encode()), (name.encode(), second.encode())]
    assert LOCAL.check(Headers(raw=raw)) == check


def _settings(**values: object) -> Settings:
    return Settings.from_env({}, check=False, database_url="x", **values)


def test_the_issuer_is_the_public_url_else_the_checked_host():
    assert guard.base_url(_settings(public_url="https://vault.example.com"), {"host": "x"}) == (
        "https://vault.example.com"
    )
    assert guard.base_url(_settings(), {"host": "127.0.0.1:8765"}) == "http://127.0.0.1:8765"
    gateway = _settings(allowed_hosts=("*",))
    assert guard.base_url(gateway, {"host": "abc.execute-api.eu-west-1.amazonaws.com"}) == (
        "https://abc.execute-api.eu-west-1.amazonaws.com"
    )
