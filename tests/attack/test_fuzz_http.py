"""Property-based fuzzing of raw HTTP requests to /mcp, in process, through two apps over one
runtime: the local one (loopback Host and Origin checks) and the one behind API Gateway
(allowed hosts "*"). Arbitrary bytes, arbitrary JSON, JSON-RPC with every member of the wrong
type, huge numbers, deep nesting, bad UTF-8, odd Content-Type / Content-Length / Host / Origin /
Authorization / protocol headers, bodies cut into chunks or abandoned half way, other methods
and paths. Every request must be answered below 500 with one truthful log line that is not
"internal" (`support.Fuzzer.check`); every 401 must look the same.

The OAuth endpoints (/register, /authorize, /consent, /token, /revoke) get bodies of their own
kind as well: urlencoded and multipart forms, well formed and broken (no, empty, wrong or huge
boundaries, parts without names, files, no closing line), with many fields and huge field
names, and JSON; each under the Content-Type it claims or another. Same rules, and more: no
logger anywhere (the MCP SDK's included) writes an error or a traceback, and the media type
each endpoint takes is enforced."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionvault.runtime import Runtime
from sessionvault.server.app import SessionVaultApp
from sessionvault.server.edge import UNAUTHORIZED

from ..support.logs import catch_logs
from .conftest import DERANDOMIZE, GENERATED, OUTCOMES, scaled
from .strategies import CHARS, FORM_BODIES, FORM_TYPE, JSON, LEGACY_VERSIONS, MODERN, NAME_POOL
from .support import HOST, Fuzzer, Req

FUZZ = settings(
    deadline=None,
    database=None,
    derandomize=DERANDOMIZE,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
BATCH = 6  # requests per example, sent concurrently


@pytest.fixture(scope="module")
def fuzzer(attack_runtime: Runtime, new_user) -> Iterator[tuple[Fuzzer, str]]:
    user = new_user(attack_runtime)
    gateway = dataclasses.replace(
        attack_runtime, settings=dataclasses.replace(attack_runtime.settings, allowed_hosts=("*",))
    )
    with catch_logs() as logs:
        fz = Fuzzer(
            [SessionVaultApp(attack_runtime), SessionVaultApp(gateway)],
            logs,
            f"fz-http-{os.urandom(4).hex()}-",
        )
        yield fz, user.key
        fz.close()
    OUTCOMES["http fuzzer"] = fz.outcomes


# ---------------------------------------------------------------------------------------------
# Bodies

METHODS = [
    "initialize",
    "notifications/initialized",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "completion/complete",
    "logging/setLevel",
]
TOOL_NAMES = ["save_session", "load_session", "search_sessions", "list_sessions", "delete_session"]

GOOD_PARAMS = st.one_of(
    st.fixed_dictionaries(
        {"name": st.sampled_from(TOOL_NAMES), "arguments": st.fixed_dictionaries({"name": NAME_POOL})}
    ),
    st.just(
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}
    ),
    st.just({}),
)
IDS = st.one_of(
    st.integers(),
    st.text(CHARS, max_size=20),
    st.none(),
    st.sampled_from([10**30, -(2**63), 1.5, True, [], {}, "", 0]),
    JSON,
)
RPC = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.one_of(st.just("2.0"), st.just("2.0"), st.just("2.0"), JSON),
        "id": IDS,
        "method": st.one_of(st.sampled_from(METHODS), st.sampled_from(METHODS), JSON),
        "params": st.one_of(GOOD_PARAMS, GOOD_PARAMS, JSON),
        "result": JSON,
        "error": JSON,
    },
)


def dumped(value: Any) -> bytes:
    return json.dumps(value).encode()


NESTING = st.sampled_from([50, 199, 200, 201, 500, 990, 1_000, 5_000, 100_000])


def nested(depth: int, inside: str) -> str:
    return "[" * depth + inside + "]" * depth


HUGE_NUMBER_TEXT = st.one_of(
    st.sampled_from([20, 300, 4_300, 4_301, 10_000]).map(lambda n: "9" * n),
    st.sampled_from(
        ["1e999999", "-1e999999", "1e-999999", "-0", "0.0000000000000000000001", "NaN", "Infinity"]
    ),
)
TEMPLATE = (
    '{"jsonrpc": "2.0", "id": ID, "method": "tools/call",'
    ' "params": {"name": "list_sessions", "arguments": {"limit": LIMIT}}}'
)

BODIES = st.one_of(
    st.binary(max_size=300),
    JSON.map(dumped),
    RPC.map(dumped),
    RPC.map(dumped),
    RPC.map(dumped),
    st.lists(RPC, max_size=4).map(dumped),  # batches
    st.tuples(HUGE_NUMBER_TEXT, HUGE_NUMBER_TEXT).map(
        lambda t: TEMPLATE.replace("ID", t[0]).replace("LIMIT", t[1]).encode()
    ),
    st.tuples(NESTING, st.sampled_from(["", "1", '{"a": 1}'])).map(lambda t: nested(*t).encode()),
    NESTING.map(
        lambda d: (
            '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "save_session",'
            f' "arguments": {{"name": "deep", "summary": "s", "plan": {nested(d, "")}}}}}}}'
        ).encode()
    ),
    NESTING.map(
        lambda d: ('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": ' + nested(d, "") + "}").encode()
    ),
    # bad UTF-8 inside a string, a byte order mark, UTF-16, a lone surrogate escape, NUL escapes
    st.sampled_from(
        [
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/\xff\xfelist"}',
            b'\xef\xbb\xbf{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
            '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'.encode("utf-16"),
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "load_session",'
            b' "arguments": {"name": "\\ud800"}}}',
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "load_session",'
            b' "arguments": {"name": "a\\u0000b"}}}',
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "load_session",'
            b' "arguments": {"name": "a", "name": "b"}}}',
            b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}',
            b"",
            b" ",
            b"null",
            b"[]",
            b"{}",
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"} trailing',
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}\x00',
        ]
    ),
    # at the body cap, and one byte over it
    st.sampled_from([1_048_576, 1_048_577]).map(
        lambda n: (
            (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * n)[: n - 3]
            + b'"}}'
        )
    ),
)

# ---------------------------------------------------------------------------------------------
# Headers

HEADER_TEXT = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=40
)


def latin1(value: str) -> bytes:
    """As a server hands a header over: bytes, read back as Latin-1 (UTF-8 when it is not)."""
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode()


HOSTS = st.one_of(
    st.sampled_from(
        [
            "127.0.0.1:8000",
            "localhost:65535",
            "[::1]:1",
            "127.0.0.1",
            "127.0.0.1:",
            "127.0.0.1:x",
            "LOCALHOST:80",
            "127.0.0.1:\uff18\uff10",
            "evil.example:8000",
            "127.0.0.1.evil.example:8000",
            "",
            "abc123.execute-api.us-east-1.amazonaws.com",
        ]
    ),
    HEADER_TEXT,
)
ORIGINS = (
    st.sampled_from(
        [
            "http://127.0.0.1:3000",
            "http://localhost:1",
            "https://127.0.0.1:3000",
            "http://evil.example",
            "null",
            "",
            "http://[::1]:8",
            "http://127.0.0.1:3000/path",
            "file://",
        ]
    )
    | HEADER_TEXT
)
CONTENT_TYPES = (
    st.sampled_from(
        [
            "application/json",
            "application/json; charset=utf-8",
            "APPLICATION/JSON",
            "application/json;charset=latin-1",
            "application/json ; x=y",
            "text/plain",
            "",
            "multipart/form-data; boundary=x",
            "application/jsonp",
            "application/json-rpc",
            "application/x-www-form-urlencoded",
            "application/json\t",
        ]
    )
    | HEADER_TEXT
)
ACCEPTS = (
    st.sampled_from(
        [
            "application/json, text/event-stream",
            "application/json",
            "text/event-stream",
            "*/*",
            "",
            "text/html",
        ]
    )
    | HEADER_TEXT
)
VERSIONS = (
    st.sampled_from([*LEGACY_VERSIONS, MODERN, "", "1999-01-01", "2025-06-18, 2025-11-25", "latest"])
    | HEADER_TEXT
)


def authorizations(key: str) -> st.SearchStrategy[str]:
    unknown = "sv_live_" + "A" * 32
    return st.sampled_from(
        [
            f"Bearer {key}",
            f"Bearer {key}",
            f"Bearer {key}",
            f"bearer {key}",
            f"BEARER  {key} ",
            f"Bearer {key} extra",
            "Bearer",
            "Bearer ",
            f"Basic {key}",
            f"Bearer {unknown}",
            f"Bearer {key[:-1]}",
            f"Bearer {key}x",
            "Bearer sv_live_" + "é" * 30,
            "Bearer sv_live_",
            f"Token {key}",
            key,
            "",
        ]
    ) | HEADER_TEXT.map(lambda t: "Bearer " + t)


# Content-Length as a template over the body's real length n
LENGTHS = st.sampled_from(
    [
        "0",
        "{n-1}",
        "{n+1}",
        "-1",
        "+{n}",
        " {n}",
        "{n} ",
        "²",
        "1e3",
        "abc",
        "",
        "9" * 19,
        "9" * 21,
        str(2**64),
        "0x10",
        "{n},{n}",
        None,
    ]
)


def content_length(template: str | None, n: int) -> str | None:
    if template is None:
        return None
    return template.replace("{n-1}", str(max(n - 1, 0))).replace("{n+1}", str(n + 1)).replace("{n}", str(n))


@st.composite
def requests(draw: st.DrawFn, auth: st.SearchStrategy[str], key: str) -> Req:
    body = draw(BODIES)
    headers: list[tuple[bytes, bytes]] = []

    # Which parts go wrong: one seed drawn, many cheap decisions (a draw per decision would
    # cost more than the request; and Hypothesis favours the ends of a range, which would
    # make a rare branch the common one).
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))

    def one_in(n: int) -> bool:
        return rng.randrange(n) == 0

    def header(name: bytes, good: str, odd: st.SearchStrategy[str | None], rarity: int = 8) -> None:
        value = draw(odd) if one_in(rarity) else good
        if value is not None and not one_in(30):  # now and then, no such header at all
            headers.append((name, latin1(value)))

    header(b"host", HOST.decode(), HOSTS)
    header(b"content-type", "application/json", CONTENT_TYPES)
    header(b"accept", "application/json, text/event-stream", ACCEPTS)
    header(b"mcp-protocol-version", "2025-06-18", VERSIONS)
    header(b"authorization", f"Bearer {key}", auth, rarity=5)
    header(b"content-length", str(len(body)), LENGTHS.map(lambda t: content_length(t, len(body))))
    if one_in(10):
        headers.append((b"origin", latin1(draw(ORIGINS))))
    if one_in(10):  # a duplicate of one of them, or a stranger
        extra = draw(
            st.sampled_from([b"host", b"content-type", b"authorization", b"content-length", b"x-junk"])
        )
        headers.append((extra, latin1(draw(HEADER_TEXT))))
    headers = draw(st.permutations(headers)) if one_in(10) else headers
    method, path = "POST", "/mcp"
    if one_in(15):
        method = draw(st.sampled_from(["GET", "PUT", "DELETE", "OPTIONS", "HEAD", "PATCH", "post", "TRACE"]))
    if one_in(15):
        path = draw(
            st.sampled_from(
                [
                    "/mcp/",
                    "/MCP",
                    "//mcp",
                    "/",
                    "/health",
                    "/mcp/../mcp",
                    "/%6dcp",
                    "/mcp%00",
                    "/mcpx",
                    *OAUTH_PATHS,
                ]
            )
            | st.text(CHARS, max_size=20).map(lambda p: "/" + p)
        )
    chunks = None
    if body and one_in(6):
        cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=4)))
        edges = [0, *cuts, len(body)]
        chunks = tuple(body[a:b] for a, b in itertools.pairwise(edges))
    disconnect = one_in(20)
    return Req(body, headers, method, path, chunks, disconnect, app=draw(st.integers(0, 1)))


# The OAuth endpoints answer without a key: the same bodies, headers and methods go there too.
OAUTH_PATHS = (
    "/authorize",
    "/token",
    "/register",
    "/revoke",
    "/consent",
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-protected-resource/mcp",
)


def test_raw_http_requests(fuzzer: tuple[Fuzzer, str]) -> None:
    fz, key = fuzzer
    before = fz.sent
    examples = scaled(1_000)

    @settings(FUZZ, max_examples=examples)
    @given(st.lists(requests(authorizations(key), key), min_size=BATCH, max_size=BATCH))
    def run(batch: list[Req]) -> None:
        for o in fz.send(batch):
            if o.reply.status == 401 and o.req.path not in OAUTH_PATHS:  # why a key was refused is never told
                assert o.reply.body == UNAUTHORIZED, o.reply.body
            if o.req.path == "/health" and o.req.method == "GET":
                assert o.reply.status == 200

    run()
    GENERATED["raw http"] = fz.sent - before
    assert fz.sent - before >= examples * BATCH


def test_the_server_still_answers_a_plain_call_afterwards(fuzzer: tuple[Fuzzer, str]) -> None:
    fz, key = fuzzer
    body = (
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call",'
        b' "params": {"name": "list_sessions", "arguments": {}}}'
    )
    headers = [
        (b"host", HOST),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2025-06-18"),
        (b"authorization", f"Bearer {key}".encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    for app in (0, 1):
        (o,) = fz.send([Req(body, headers, app=app)])
        assert o.reply.tool_result()["isError"] is False


# ---------------------------------------------------------------------------------------------
# The OAuth endpoints with form, multipart and JSON bodies

FORM_PATHS = ("/register", "/authorize", "/consent", "/token", "/revoke")
TAKES = {"/register": "application/json", "/token": FORM_TYPE, "/revoke": FORM_TYPE}
OAUTH_ORIGINS = st.sampled_from(
    [
        "http://127.0.0.1:8000",  # the server's own (the consent page's)
        "http://localhost:6274",
        "https://attacker.example",
        "null",
        "",
        "http://127.0.0.1:8000/",
    ]
)
ODD_FORM_TYPES = st.sampled_from(
    [
        "text/plain",
        "application/json",
        FORM_TYPE,
        "multipart/form-data",
        "multipart/form-data; boundary=b",
        "Application/X-WWW-Form-Urlencoded",
        "application/x-www-form-urlencoded; charset=latin-1",
        "",
    ]
)


@st.composite
def oauth_requests(draw: st.DrawFn, key: str) -> Req:
    body, content_type = draw(FORM_BODIES)
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))

    def one_in(n: int) -> bool:
        return rng.randrange(n) == 0

    path = draw(st.sampled_from(FORM_PATHS))
    if one_in(20):
        path += "/"
    headers = [(b"host", HOST if not one_in(30) else b"evil.example:8000")]
    if not one_in(30):
        headers.append((b"content-type", latin1(draw(ODD_FORM_TYPES) if one_in(8) else content_type)))
    if one_in(15):  # a second Content-Type, before or after the first
        second = (b"content-type", latin1(draw(ODD_FORM_TYPES)))
        headers.insert(rng.randrange(len(headers) + 1), second)
    if one_in(6):
        headers.append((b"origin", latin1(draw(OAUTH_ORIGINS))))
    if one_in(8):
        basic = draw(st.sampled_from(["Basic eDp5", "Basic !!!", "Basic ", f"Bearer {key}", "Basic eA=="]))
        headers.append((b"authorization", basic.encode()))
    if not one_in(20):
        headers.append((b"content-length", str(len(body)).encode()))
    method = "POST" if not one_in(15) else draw(st.sampled_from(["GET", "PUT", "post"]))
    chunks = None
    if body and one_in(6):
        cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=4)))
        edges = [0, *cuts, len(body)]
        chunks = tuple(body[a:b] for a, b in itertools.pairwise(edges))
    return Req(body, headers, method, path, chunks, one_in(25), app=draw(st.integers(0, 1)))


class AnyErrorLog(logging.Handler):
    """Every record at WARNING or above, from any logger but the app's own request lines (the
    Fuzzer reads those), or any record carrying a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.bad: list[str] = []
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "request" and record.name == "sessionvault":
            return
        if record.levelno >= logging.ERROR or record.exc_info or record.exc_text:
            with self._lock:
                self.bad.append(f"{record.name} {record.levelname} {record.getMessage()}")


def test_oauth_endpoints_with_form_multipart_and_json_bodies(fuzzer: tuple[Fuzzer, str]) -> None:
    fz, key = fuzzer
    before = fz.sent
    examples = scaled(400)
    errors = AnyErrorLog()
    root = logging.getLogger()
    root.addHandler(errors)

    @settings(FUZZ, max_examples=examples)
    @given(st.lists(oauth_requests(key), min_size=BATCH, max_size=BATCH))
    def run(batch: list[Req]) -> None:
        for o in fz.send(batch):  # each below 500, logged truthfully, never "internal"
            path = o.req.path.rstrip("/")
            assert o.log is not None
            if o.log.get("edge_check") == "host" or o.req.method != "POST" or path not in TAKES:
                continue
            content_types = [v for k, v in o.req.headers if k == b"content-type"]
            takes = len(content_types) == 1 and (
                content_types[0].decode("latin-1").partition(";")[0].strip().lower() == TAKES[path]
            )
            if not takes and o.log.get("edge_check") != "origin":
                assert o.reply.status == 415, (o.req.path, o.req.headers, o.reply.status, o.reply.body[:200])
        assert not errors.bad, errors.bad

    try:
        run()
    finally:
        root.removeHandler(errors)
    GENERATED["oauth forms"] = fz.sent - before
    assert fz.sent - before >= examples * BATCH
