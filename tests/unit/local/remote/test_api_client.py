"""The laptop side's HTTP API client against a canned loopback server: the URL it calls, each
refusal as the project's own error with the server's message, a streamed export, and the
batched import (line numbers of the whole input, a bad line stops it, a 429 is waited out)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from sessionvault.errors import (
    ConfigError,
    ProviderUnavailable,
    QuotaExceeded,
    ScopeMissing,
    UpstreamError,
    ValidationFailed,
)
from sessionvault.local.remote import api_client
from sessionvault.local.remote.api_client import Api, RateLimited, Unavailable

FORMAT = "sessionvault-export/1"
HEADER = json.dumps({"format": FORMAT}).encode()


@dataclass
class Canned:
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] | None = None  # sent chunked, then the connection is closed


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


class Fake:
    """Answers from `replies` in turn (the last one again when they run out); records requests."""

    def __init__(self) -> None:
        self.replies: list[Canned] = []
        self.seen: list[Seen] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                parts = urlsplit(self.path)
                fake.seen.append(
                    Seen(
                        self.command,
                        parts.path,
                        {k: v[-1] for k, v in parse_qs(parts.query).items()},
                        {k.lower(): v for k, v in self.headers.items()},
                        self.rfile.read(length),
                    )
                )
                reply = fake.replies.pop(0) if len(fake.replies) > 1 else fake.replies[0]
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                if reply.chunks is not None:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in reply.chunks:
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    return
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = do_DELETE = answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/mcp"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def reply(self, *replies: Canned) -> Api:
        self.replies = list(replies)
        return Api.at(self.url, "sv_live_test")


@pytest.fixture(scope="module")
def _server() -> Iterator[Fake]:
    f = Fake()
    yield f
    f.httpd.shutdown()
    f.httpd.server_close()


@pytest.fixture
def fake(_server: Fake) -> Fake:
    _server.replies, _server.seen = [], []
    return _server


def error(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()


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
    assert api_client.api_root(url) == root


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


# --------------------------------------------------------------------------- export


def test_an_export_streams_line_by_line(fake: Fake) -> None:
    lines = [HEADER + b"\n", b'{"name": "a", "repo": "", "versions": []}\n']
    api = fake.reply(Canned(chunks=[lines[0][:5], lines[0][5:] + lines[1], b""]))
    assert list(api_client.export(api)) == lines


def test_an_export_cut_off_mid_line_is_an_error_not_a_shorter_export(fake: Fake) -> None:
    api = fake.reply(Canned(chunks=[HEADER + b"\n" + b'{"name": "a", "rep', b""]))
    got: list[bytes] = []
    with pytest.raises(Unavailable, match="cut off mid-line"):
        got.extend(api_client.export(api))
    assert got == [HEADER + b"\n"]


def test_an_export_refused_says_why(fake: Fake) -> None:
    with pytest.raises(ScopeMissing):
        list(api_client.export(fake.reply(Canned(403, error("scope", "needs read")))))


# --------------------------------------------------------------------------- import


def result(sessions: int = 1, added: int = 1, there: int = 0, problems: list[str] | None = None) -> Canned:
    body = {
        "sessions": sessions,
        "versions_added": added,
        "versions_already_there": there,
        "problems": problems or [],
    }
    return Canned(body=json.dumps(body).encode())


def session(name: str, versions: int = 1) -> bytes:
    kept = [
        {"version": n, "saved_at": "", "record": {"summary": f"{name}{n}"}} for n in range(1, versions + 1)
    ]
    return json.dumps({"name": name, "repo": "", "versions": kept}).encode() + b"\n"


def test_an_import_is_sent_in_batches_each_with_the_header(
    fake: Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api_client, "BATCH_VERSIONS", (1, 2, 2))
    api = fake.reply(result(2, 2), result(1, 1, problems=["line 2: invalid arguments: summary"]))
    lines = [HEADER + b"\n", session("a"), b"\n", session("b"), session("c")]
    done = api_client.import_lines(api, lines, format_name=FORMAT, dry_run=True)
    bodies = [s.body.splitlines() for s in fake.seen]
    assert bodies == [[HEADER, session("a")[:-1], session("b")[:-1]], [HEADER, session("c")[:-1]]]
    assert all(
        s.query == {"dry_run": "1"} and s.headers["content-type"] == "application/x-ndjson" for s in fake.seen
    )
    assert (done.sessions, done.versions_added, done.lines_done, done.stopped) == (3, 3, 5, "")
    assert done.problems == ["line 5: invalid arguments: summary"]  # the input's line, not the batch's


def test_a_line_that_is_not_json_stops_the_import_there(fake: Fake) -> None:
    api = fake.reply(result())
    lines = [HEADER + b"\n", session("a"), b'{"name": "b", "vers\n', session("c")]
    done = api_client.import_lines(api, lines, format_name=FORMAT)
    assert [len(s.body.splitlines()) for s in fake.seen] == [2]  # the line before it only
    assert (
        done.lines_done == 2
        and "line 3 is not JSON" in done.stopped
        and "nothing from line 3 on" in done.stopped
    )


def test_an_input_that_is_not_an_export_sends_nothing(fake: Fake) -> None:
    api = fake.reply(result())
    with pytest.raises(ValidationFailed, match="not a SessionVault export"):
        api_client.import_lines(api, [session("a")], format_name=FORMAT)
    with pytest.raises(ValidationFailed, match="the input is empty"):
        api_client.import_lines(api, [b"\n"], format_name=FORMAT)
    assert fake.seen == []


def test_a_rate_limited_batch_is_sent_again_after_retry_after(fake: Fake) -> None:
    api = fake.reply(Canned(429, b"{}", {"Retry-After": "3"}), result())
    slept: list[float] = []
    said: list[str] = []
    done = api_client.import_lines(
        api, [HEADER, session("a")], format_name=FORMAT, sleep=slept.append, waiting=said.append
    )
    assert slept == [3] and len(fake.seen) == 2 and done.versions_added == 1 and not done.stopped
    assert "trying lines 2-2 again in 3 s" in said[0]


def test_a_quota_or_a_long_wait_stops_the_import_and_says_how_far_it_got(fake: Fake, monkeypatch) -> None:
    monkeypatch.setattr(api_client, "BATCH_VERSIONS", (1, 1, 1))
    api = fake.reply(result(), Canned(409, error("quota", "storage quota reached")))
    done = api_client.import_lines(api, [HEADER, session("a"), session("b")], format_name=FORMAT)
    assert done.lines_done == 2 and done.stopped.startswith("stopped at lines 3-3: storage quota reached")
    assert (
        "Everything up to line 2 is imported" in done.stopped and "adds only what is missing" in done.stopped
    )
    api = fake.reply(Canned(429, b"{}", {"Retry-After": "86400"}))  # the day's limit: not waited for
    done = api_client.import_lines(api, [HEADER, session("a")], format_name=FORMAT, sleep=pytest.fail)
    assert "rate limiting" in done.stopped and done.lines_done == 1


def test_batches_grow_when_the_server_is_fast() -> None:
    low, first, high = api_client.BATCH_VERSIONS
    assert api_client._next_size(first, 25, 0.25) == min(high, int(api_client.BATCH_TARGET_S / 0.01))
    assert api_client._next_size(first, 25, 100.0) == low
    assert api_client._next_size(first, 0, 1.0) == first


def test_save_arguments_become_an_export_document() -> None:
    records = [
        {"name": "m/1", "summary": "one", "repo": "github.com/a/b", "handoff": True},
        {"name": "m/2", "summary": "two"},
        {"name": "m/1", "summary": "one, later", "repo": "github.com/a/b", "to_client": "codex"},
    ]
    lines = [json.loads(line) for line in api_client.as_export(records, FORMAT)]
    assert lines[0] == {"format": FORMAT}
    assert lines[1] == {
        "name": "m/1",
        "repo": "github.com/a/b",
        "versions": [
            {"version": 1, "saved_at": "", "record": {"summary": "one", "repo": "github.com/a/b"}},
            {"version": 2, "saved_at": "", "record": {"summary": "one, later", "repo": "github.com/a/b"}},
        ],
    }
    assert lines[2]["name"] == "m/2" and len(lines) == 3
    with pytest.raises(ValidationFailed, match="needs a name"):
        list(api_client.as_export([{"summary": "x"}], FORMAT))
