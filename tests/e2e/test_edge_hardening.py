"""End to end, through uvicorn on a real socket: nothing unauthenticated can crash the server
or grow the database. Requests refused at the edge never reach the database, failed
authentications are counted (a log line, a counter per minute) rather than stored one row
each, one address that keeps failing is held off in memory, an exception nobody expected
still leaves its log line, and a local server prunes its own old rows."""

from __future__ import annotations

import json
import re
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import httpx2
import psycopg
import pytest
from psycopg import sql

from sessionvault.db.pool import Database
from sessionvault.jobs import maintenance
from sessionvault.local.host import upkeep
from sessionvault.local.host.target import Target
from sessionvault.runtime import Runtime, open_runtime
from sessionvault.server import edge as edge_module
from sessionvault.server.admission import admitter as auth
from sessionvault.server.app import SessionVaultApp
from sessionvault.server.mcp.endpoint import McpEndpoint
from sessionvault.service import accounts

from ..conftest import ServerThread, admin_db, free_port, make_settings, make_user
from ..support.logs import LogCatcher, catch_logs

LIST_TOOLS = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def unknown_key() -> str:
    return "sv_live_" + secrets.token_urlsafe(24)


def post(
    http: httpx2.Client, url: str, body: bytes = LIST_TOOLS, key: str | None = None, **headers: str
) -> httpx2.Response:
    sent = {**JSON, **{k.replace("_", "-"): v for k, v in headers.items()}}
    if key:
        sent["Authorization"] = f"Bearer {key}"
    return http.post(url, content=body, headers=sent)


def table_rows(pg: Any) -> dict[str, int]:
    """Rows in every table of the schema, read as the owner (a superuser: no RLS in the way).
    A partition's rows are counted once, in its parent: listing partitions too counted every
    auth_failures row twice, and a run that crossed a minute went over the bound."""
    with psycopg.connect(pg.owner_url) as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"
                " AND relkind IN ('r', 'p') AND NOT relispartition"
            ).fetchall()
        ]
        query = sql.SQL("SELECT count(*) FROM {}")
        return {n: conn.execute(query.format(sql.Identifier(n))).fetchone()[0] for n in names}  # type: ignore[index]


def grown(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {t: after[t] - before.get(t, 0) for t in after if after[t] != before.get(t, 0)}


def request_lines(out: str) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in out.splitlines() if x.startswith('{"level"')]
    return [x for x in lines if x.get("message") == "request"]


def logged_until(capfd: pytest.CaptureFixture[str], logs: LogCatcher, request_id: str) -> str:
    """What the server wrote to stdout, once the log line of `request_id` is out (it is written
    just after the answer is sent, so it may come a moment after the client has its reply).
    Waited for on `logs`, not by polling capfd: reading it while the server writes can lose
    the line. The catcher hears a line after the stdout handler has written it."""
    logs.requests_until(lambda lines: any(x.get("correlation_id") == request_id for x in lines))
    return capfd.readouterr().out


@pytest.fixture(scope="module")
def edge(runtime: Runtime) -> Iterator[ServerThread]:
    """A server of this module's own: its per-address failure count starts at zero."""
    with ServerThread(runtime) as s:
        yield s


# --- refused at the edge: before the body, before the database ----------------------------------


def test_a_text_plain_post_is_a_415_and_writes_nothing(edge, runtime, pg, http):
    user = make_user(runtime)
    before = table_rows(pg)
    # The one POST any web page may send to 127.0.0.1 without asking first, even with a good key.
    for key in (user.key, unknown_key(), None):
        reply = post(http, edge.url, key=key, Content_Type="text/plain")
        assert reply.status_code == 415 and reply.json() == {"error": "Content-Type must be application/json"}
    assert grown(before, table_rows(pg)) == {}


def test_a_foreign_host_is_a_421_and_a_foreign_origin_a_403(edge, runtime, pg, http):
    user = make_user(runtime)
    before = table_rows(pg)
    rebound = post(http, edge.url, key=user.key, Host=f"attacker.example:{edge.port}")
    assert rebound.status_code == 421 and rebound.json() == {"error": "invalid Host header"}
    for origin in ("https://attacker.example", "null", f"http://attacker.example:{edge.port}"):
        reply = post(http, edge.url, key=user.key, Origin=origin)
        assert reply.status_code == 403 and reply.json() == {"error": "invalid Origin header"}
    assert grown(before, table_rows(pg)) == {}  # no admission, no audit row, no budget spent
    # A loopback origin (a local tool in a browser) passes our check and the SDK's alike.
    assert post(http, edge.url, key=user.key, Origin="http://localhost:6274").status_code == 200


GARBAGE = [
    b"",
    b"{not json",
    b"[" * 50_000,
    b"9" * 5_000,
    b'{"summary": "\xff\xfe"}',
    b"\x00\x01\x02",
    b'{"a": 1}{"b": 2}',
    b"[]",
    b"null",
    b'"x"',
    b"{}",
    b'{"jsonrpc": "2.0"}',
    b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "x"}',
    b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]',
]


def test_garbage_bodies_are_400s_never_500s(edge, runtime, http):
    user = make_user(runtime)
    for body in GARBAGE:
        with_key = post(http, edge.url, body, user.key)
        assert with_key.status_code == 400, (body[:40], with_key.status_code, with_key.content[:200])
    for body in GARBAGE[:7]:  # not even JSON: refused before authentication is looked at
        assert post(http, edge.url, body).status_code == 400


def test_edge_refusals_and_missing_keys_need_no_database(runtime, http):
    """The same requests against a server whose database is unreachable: none is a 503."""
    dead = Database(f"host=127.0.0.1 port={free_port()} dbname=x user=x", timeout=1)
    down = Runtime(runtime.settings, dead, runtime.keys, runtime.vault)
    try:
        with ServerThread(down) as s:
            statuses = [
                post(http, s.url, Content_Type="text/plain").status_code,
                post(http, s.url, Host="attacker.example:80").status_code,
                post(http, s.url, Origin="https://attacker.example").status_code,
                post(http, s.url, b"{oops").status_code,
                post(http, s.url).status_code,  # no key
                post(http, s.url, Authorization="Bearer not-a-key").status_code,
            ]
    finally:
        dead.close()
    assert statuses == [415, 421, 403, 400, 401, 401]


# --- failed authentications: counted, not stored ----------------------------------------------


def test_a_thousand_failed_authentications_leave_a_handful_of_rows(pg, http):
    rt = open_runtime(make_settings(pg, auth_failures_per_minute=100_000))  # no per-address limit here
    revoked = make_user(rt)
    accounts.revoke_key(admin_db(), revoked.key)
    attempts = [
        lambda: {"key": unknown_key()},
        lambda: {"key": revoked.key},
        lambda: {},  # no key
        lambda: {"Authorization": "Bearer sv_live_short"},  # not shaped like a key
        lambda: {"Authorization": "Basic dXNlcjpwYXNz"},
    ]
    try:
        with ServerThread(rt) as s:
            before = table_rows(pg)
            statuses = {post(http, s.url, **attempts[i % 5]()).status_code for i in range(1000)}
            after = table_rows(pg)
    finally:
        rt.close()
    assert statuses == {401}
    growth = grown(before, after)
    assert "audit_events" not in growth and "rate_counters" not in growth
    # A counter per minute and reason (unknown, revoked), two if the run crossed a minute.
    assert sum(growth.values()) <= 4, growth


def test_an_address_that_keeps_failing_is_held_off_in_memory(pg, http):
    rt = open_runtime(make_settings(pg, auth_failures_per_minute=5))
    regular, newcomer = make_user(rt), make_user(rt)
    try:
        with ServerThread(rt) as s:
            assert post(http, s.url, key=regular.key).status_code == 200  # admitted before the flood
            before = table_rows(pg)
            replies = [post(http, s.url, key=unknown_key()) for _ in range(1000)]
            after = table_rows(pg)
            # Every local client shares 127.0.0.1: one with a key this server admitted lately
            # keeps working, any other waits like the flood does.
            regular_after = post(http, s.url, key=regular.key).status_code
            newcomer_after = post(http, s.url, key=newcomer.key)
    finally:
        rt.close()
    assert [r.status_code for r in replies[:5]] == [401] * 5
    assert {r.status_code for r in replies[5:]} == {429}
    limited = replies[-1]
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert limited.json()["error"] == "too many failed authentications from this address"
    assert sum(grown(before, after).values()) <= 2  # only the first five reached the database
    assert regular_after == 200
    assert newcomer_after.status_code == 429 and "retry-after" in newcomer_after.headers


# --- the catch-all --------------------------------------------------------------------------------


def test_an_exception_inside_the_app_still_leaves_its_log_line(edge, runtime, http, monkeypatch, capfd):
    user = make_user(runtime)

    def broken(*args: object) -> None:
        raise RuntimeError("detail-that-must-stay-out-of-the-log")

    monkeypatch.setattr(auth.Admitter, "admit", broken)
    with catch_logs() as logs:
        reply = post(http, edge.url, key=user.key, X_Request_ID="catch-all-1")
        monkeypatch.undo()
        out = logged_until(capfd, logs, "catch-all-1")
    assert reply.status_code == 500 and reply.json() == {"error": "internal error"}
    (line,) = [x for x in request_lines(out) if x["correlation_id"] == "catch-all-1"]
    assert (line["status"], line["error_class"], line["failure"]) == (500, "internal", "RuntimeError")
    assert line["level"] == "ERROR" and "detail-that-must-stay-out" not in out
    assert post(http, edge.url, key=user.key).status_code == 200  # and the server carries on


def test_an_admitted_call_that_crashes_keeps_its_audit_row_marked_internal(
    edge, runtime, pg, http, monkeypatch
):
    user = make_user(runtime)

    async def broken(*args: object) -> None:
        raise ValueError("boom")

    monkeypatch.setattr(McpEndpoint, "_dispatch", broken)
    assert post(http, edge.url, key=user.key).status_code == 500
    monkeypatch.undo()
    deadline, rows = time.monotonic() + 5, []
    while time.monotonic() < deadline:  # the row is marked just after the answer is sent
        with psycopg.connect(pg.owner_url) as conn:
            sql_ = "SELECT tool, outcome, error_class FROM audit_events WHERE user_id = %s"
            rows = conn.execute(sql_, (user.id,)).fetchall()
        if rows and rows[0][1] == "error":
            break
        time.sleep(0.05)
    assert rows == [("tools/list", "error", "internal")]


# --- a local server prunes its own old rows -----------------------------------------------------


def test_local_upkeep_prunes_old_counters_and_audit_rows(runtime, pg, monkeypatch):
    user = make_user(runtime)
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO rate_counters (user_id, budget, span, slot, hits) VALUES"
            " (%s, 'tool', 'minute', now() - interval '3 days', 1),"
            " (%s, 'tool', 'minute', now(), 1)",
            (user.id, user.id),
        )
        conn.execute(
            "INSERT INTO audit_events (user_id, at, tool, outcome, latency_ms) VALUES"
            " (%s, now() - interval '200 days', 'old', 'ok', 1), (%s, now(), 'new', 'ok', 1)",
            (user.id, user.id),
        )

    def broken(rt: Runtime) -> dict[str, int]:
        raise RuntimeError("a job that fails does not stop the others")

    monkeypatch.setitem(maintenance.TASKS, "prune_broken", broken)
    rounds: list[dict[str, Any]] = []
    target = Target(make_settings(pg), pg.owner_url, pg.admin_url)
    job = upkeep.Upkeep.for_target(target, interval_s=0.05, on_round=rounds.append).start()
    deadline = time.monotonic() + 30
    try:
        while len(rounds) < 2 and time.monotonic() < deadline:  # it goes on after a failing job
            time.sleep(0.05)
    finally:
        job.stop()
    assert len(rounds) >= 2
    assert set(rounds[0]) >= {"prune_rate_limits", "prune_audit", "prune_broken"}
    assert rounds[0]["prune_broken"] == {"failed": "RuntimeError"} and "reembed" not in rounds[0]
    with psycopg.connect(pg.owner_url) as conn:
        counters = conn.execute(
            "SELECT count(*) FROM rate_counters WHERE user_id = %s", (user.id,)
        ).fetchone()
        tools = conn.execute("SELECT tool FROM audit_events WHERE user_id = %s", (user.id,)).fetchall()
    assert counters == (1,) and tools == [("new",)]


def test_local_upkeep_without_an_admin_url_logs_and_leaves_the_server_alone(pg, capfd):
    job = upkeep.Upkeep.for_target(Target(make_settings(pg), pg.owner_url, ""), interval_s=0.05).start()
    job._thread.join(10)
    assert not job._thread.is_alive()
    assert "local upkeep is off" in capfd.readouterr().out


def test_serve_runs_the_upkeep_and_ignores_forwarded_addresses(pg, monkeypatch):
    from sessionvault.cli import server as cli_server
    from sessionvault.local.host import listener

    seen: dict[str, Any] = {}

    class Built:  # what listener.build gives back: serve() runs it on its bound socket
        def run(self, sockets: list[socket.socket]) -> None:
            seen["threads"] = {t.name for t in threading.enumerate()}

    def fake_build(app: object, host: str, port: int, **kwargs: Any) -> Built:
        seen.update(kwargs, app=app)
        return Built()

    monkeypatch.setattr(listener, "build", fake_build)
    cli_server.serve(Target(make_settings(pg), pg.owner_url, pg.admin_url), "127.0.0.1", free_port())
    app = getattr(seen["app"], "app", seen["app"])  # inside the local server's pressure gate, if any
    assert isinstance(app, SessionVaultApp)
    assert seen["proxy_headers"] is False  # X-Forwarded-For cannot pick the address failures count by
    assert "sessionvault-upkeep" in seen["threads"]
    assert "sessionvault-upkeep" not in {t.name for t in threading.enumerate()}  # stopped with the server


# --- OAuth (issue #11): the same edge, the same 401 -------------------------------------------


def test_oauth_endpoints_with_a_foreign_host_are_421s_and_write_nothing(edge, pg, http):
    base = edge.url.removesuffix("/mcp")
    before = table_rows(pg)
    foreign = {"Host": f"attacker.example:{edge.port}"}
    replies = [
        http.post(f"{base}/register", json={"redirect_uris": ["http://127.0.0.1:1/cb"]}, headers=foreign),
        http.get(f"{base}/authorize", params={"client_id": "x"}, headers=foreign),
        http.get(f"{base}/consent", params={"request": "x"}, headers=foreign),
        http.get(f"{base}/.well-known/oauth-authorization-server", headers=foreign),
    ]
    assert [r.status_code for r in replies] == [421] * 4
    assert grown(before, table_rows(pg)) == {}


REGISTRATION = {"redirect_uris": ["http://127.0.0.1:1/cb"], "client_name": "drive-by"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
FOREIGN_PAGE = {"Origin": "https://attacker.example"}


def test_a_drive_by_page_can_neither_register_nor_post_to_token_or_revoke(edge, pg, http):
    """A page of any site may POST text/plain to 127.0.0.1 without asking first: /register
    took it and stored a client (the local registration cap let a page use it up)."""
    base = edge.url.removesuffix("/mcp")
    before = table_rows(pg)
    body = json.dumps(REGISTRATION)
    page = http.post(f"{base}/register", content=body, headers={"Content-Type": "text/plain", **FOREIGN_PAGE})
    assert page.status_code == 403 and page.json() == {"error": "invalid Origin header"}
    plain = http.post(f"{base}/register", content=body, headers={"Content-Type": "text/plain"})
    assert plain.status_code == 415 and plain.json() == {"error": "Content-Type must be application/json"}
    framed = http.post(f"{base}/register", json=REGISTRATION, headers=FOREIGN_PAGE)
    assert framed.status_code == 403
    for path in ("/token", "/revoke"):
        form = {"grant_type": "refresh_token", "refresh_token": "x", "token": "x", "client_id": "x"}
        assert http.post(f"{base}{path}", data=form, headers=FOREIGN_PAGE).status_code == 403
        as_json = http.post(f"{base}{path}", json=form)
        assert as_json.status_code == 415
        assert as_json.json() == {"error": "Content-Type must be application/x-www-form-urlencoded"}
    assert grown(before, table_rows(pg)) == {}
    # A native client (no Origin) and a local tool in a browser (a loopback one) still register.
    for origin in ({}, {"Origin": "http://localhost:6274"}):
        assert http.post(f"{base}/register", json=REGISTRATION, headers=origin).status_code == 201


def test_forms_that_cannot_be_parsed_are_4xx_never_500s(edge, http, capfd):
    base = edge.url.removesuffix("/mcp")
    no_boundary = {"Content-Type": "multipart/form-data"}
    many = urlencode([(f"f{i}", "v") for i in range(1001)])
    for path in ("/token", "/revoke"):  # multipart without a boundary: it was a 500
        reply = http.post(f"{base}{path}", content=b"\x00", headers=no_boundary)
        assert reply.status_code == 415, (path, reply.status_code, reply.text)
        many_fields = http.post(f"{base}{path}", content=many, headers=FORM)
        assert many_fields.status_code == 400
        assert many_fields.json() == {
            "error": "invalid_request",
            "error_description": "the form could not be read",
        }
    # 1,001 fields to the consent page: it was a 500; now its own kind of error page.
    consent = http.post(f"{base}/consent", content=many, headers=FORM)
    assert consent.status_code == 400 and consent.headers["content-type"].startswith("text/html")
    assert "This form could not be read" in consent.text
    assert consent.headers["x-frame-options"] == "DENY"
    for headers in (no_boundary, {"Content-Type": "multipart/form-data; boundary=x"}):
        assert http.post(f"{base}/consent", content=b"garbage", headers=headers).status_code == 400
        assert http.post(f"{base}/authorize", content=b"garbage", headers=headers).status_code == 400
    out = capfd.readouterr()
    assert '"status":500' not in out.out and "Traceback" not in out.err


def test_a_callers_request_id_is_kept_only_in_its_fixed_shape(edge, runtime, pg, http, capfd):
    """Local mode: the X-Request-Id header names the log line and the audit row; only a
    bounded id of letters, digits, dot, dash and underscore, else a fresh one."""
    user = make_user(runtime)
    good = f"req-{secrets.token_hex(4)}"
    marker = secrets.token_hex(6)
    odd = [f"evil {marker}", f'x","user_id":"{marker}', "a" * 60 + marker, f"<b>{marker}</b>", f"{marker}/x"]
    with catch_logs() as logs:
        for rid in [*odd, good]:
            assert post(http, edge.url, key=user.key, X_Request_ID=rid).status_code == 200
        out = logged_until(capfd, logs, good)
    with psycopg.connect(pg.owner_url) as conn:
        rows = conn.execute("SELECT request_id FROM audit_events WHERE user_id = %s", (user.id,)).fetchall()
    ids = sorted(r[0] for r in rows)
    assert len(ids) == 6 and good in ids
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids if i != good), ids
    assert marker not in out
    logged = {x["correlation_id"] for x in request_lines(out)}
    assert good in logged and not [i for i in logged if marker in i]


def raw_request(
    port: int, path: str = "/mcp", length: int = 100, content_type: str = "application/json"
) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def read_until_closed(sock: socket.socket, timeout: float) -> tuple[bytes, bool]:
    """Everything the server sends until it closes the connection, and whether it ended in a
    reset (a server closing with unread bytes from us resets it); fails if it is never closed."""
    sock.settimeout(timeout)
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)  # socket.timeout (a failure) if the server holds it open
        except ConnectionResetError:
            return received, True
        if not chunk:
            return received, False
        received += chunk


@pytest.mark.parametrize(
    ("path", "content_type", "sent"),
    [
        ("/mcp", "application/json", b'{"jsonrpc": "2.0", '),
        ("/mcp", "application/json", b""),  # headers only, then nothing at all
        ("/token", "application/x-www-form-urlencoded", b"grant_type="),
        ("/register", "application/json", b"{"),
        ("/consent", "application/x-www-form-urlencoded", b"request="),
    ],
)
def test_a_body_that_never_finishes_is_a_408_and_the_connection_is_closed(
    edge, runtime, http, monkeypatch, path, content_type, sent
):
    """A client that sends its headers and part of a body, then waits: it used to hold its
    connection (and a task) for as long as it liked."""
    monkeypatch.setattr(edge_module, "BODY_DEADLINE_S", 1.0)
    user = make_user(runtime)
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", edge.port)) as slow:
        slow.sendall(raw_request(edge.port, path, content_type=content_type) + sent)
        # Meanwhile the server answers others as usual.
        assert post(http, edge.url, key=user.key).status_code == 200
        answer, _ = read_until_closed(slow, timeout=10)
    waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower()
    assert json.loads(body) == {"error": "request body not received in time"}
    assert 1.0 <= waited < 8
    assert post(http, edge.url, key=user.key).status_code == 200  # and afterwards


def test_a_body_that_trickles_in_is_cut_off_at_the_deadline_too(edge, runtime, http, monkeypatch):
    """The deadline is for the whole body, not for each read: a byte every 0.1 s is no way
    round it."""
    monkeypatch.setattr(edge_module, "BODY_DEADLINE_S", 1.0)
    user = make_user(runtime)
    stop = threading.Event()
    with socket.create_connection(("127.0.0.1", edge.port)) as slow:
        slow.sendall(raw_request(edge.port, length=10_000))

        def trickle() -> None:
            while not stop.wait(0.1):
                try:
                    slow.sendall(b" ")
                except OSError:  # closed by the server: what the test waits for
                    return

        sender = threading.Thread(target=trickle, daemon=True)
        started = time.monotonic()
        sender.start()
        try:
            answer, reset = read_until_closed(slow, timeout=10)
        finally:
            stop.set()
            sender.join(5)
    # Still sending when the server closes: the close may reach us as a reset, before the 408.
    assert answer.startswith(b"HTTP/1.1 408 ") or (reset and not answer), answer[:200]
    assert 1.0 <= time.monotonic() - started < 8
    assert post(http, edge.url, key=user.key).status_code == 200


def test_an_unknown_access_token_gets_the_same_401_as_an_unknown_key(edge, http):
    metadata = edge.url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp"
    replies = [
        post(http, edge.url, key=unknown_key()),
        post(http, edge.url, key="sv_at_" + secrets.token_urlsafe(32)),
        post(http, edge.url, key="sv_rt_" + secrets.token_urlsafe(32)),  # a refresh token is no bearer
        post(http, edge.url),
    ]
    shapes = {(r.status_code, r.content, r.headers["www-authenticate"]) for r in replies}
    assert shapes == {(401, b'{"error": "unauthorized"}', f'Bearer resource_metadata="{metadata}"')}


# --- text the database cannot hold, and /health ----------------------------------------------

NUL_Q, SURROGATE_Q = "%00", "%ED%A0%80"  # U+D800 as the bytes UTF-8 would give it, were it allowed
NUL_J, SURROGATE_J = "\\u0000", "\\ud800"  # as JSON escapes


def unholdable_requests(key: str) -> list[tuple[str, str, bytes | None, dict[str, str]]]:
    """Every surface, each place text arrives: what used to reach a handler (and, before
    authentication, became a 500 on /authorize, /token, /revoke, /register and the API)."""
    api = {"Authorization": f"Bearer {key}"}
    made: list[tuple[str, str, bytes | None, dict[str, str]]] = []
    for q, j in ((NUL_Q, NUL_J), (SURROGATE_Q, SURROGATE_J)):
        made += [
            ("GET", f"/authorize?response_type=code&client_id=a{q}b", None, {}),
            ("POST", "/authorize", f"response_type=code&client_id=a{q}b".encode(), FORM),
            ("POST", "/token", f"grant_type=authorization_code&code=c&client_id=a{q}b".encode(), FORM),
            ("POST", "/token", f"grant_type=refresh_token&refresh_token=r{q}&client_id=x".encode(), FORM),
            ("POST", "/revoke", f"token=t&client_id=a{q}b".encode(), FORM),
            ("POST", "/consent", f"request=r{q}&decision=approve".encode(), FORM),
            ("POST", "/register", f'{{"redirect_uris": ["http://127.0.0.1:1/cb"], "client_name": "{j}"}}'
             .encode(), {"Content-Type": "application/json"}),
            ("GET", f"/api/v1/session/versions?name=a{q}b", None, api),
            ("GET", f"/api/v1/session?name=a{q}b", None, api),
            ("GET", f"/api/v1/sessions?repo=r{q}", None, api),
            ("GET", f"/web/session?name=a{q}b", None, {}),
            ("GET", f"/.well-known/oauth-authorization-server?x={q}", None, {}),
            ("POST", f"/mcp?x={q}", LIST_TOOLS, {**JSON, **api}),
            ("POST", "/mcp", (
                '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "save_session",'
                f' "arguments": {{"name": "n", "summary": "a{j}b"}}}}}}'
            ).encode(), {**JSON, **api}),
        ]  # fmt: skip
    made += [
        ("GET", "/web/a%00b", None, {}),
        ("GET", "/api/v1/a%00b", None, api),
        ("POST", "/mcp%00", b"{}", JSON),
    ]
    return made


def test_nul_and_lone_surrogates_are_400s_at_the_edge_on_every_surface(edge, runtime, pg, http, capfd):
    user = make_user(runtime)
    base = edge.url.removesuffix("/mcp")
    before = table_rows(pg)
    for method, path, body, headers in unholdable_requests(user.key):
        reply = http.request(method, base + path, content=body, headers=headers)
        assert reply.status_code == 400, (method, path, reply.status_code, reply.text[:300])
        assert "NUL (U+0000)" in reply.text or "surrogate" in reply.text or "form could not" in reply.text, (
            path,
            reply.text[:300],
        )
    assert grown(before, table_rows(pg)) == {}  # refused before admission: no row, no budget
    out = capfd.readouterr()
    assert '"status":500' not in out.out and "Traceback" not in out.err
    lines = [x for x in request_lines(out.out) if x.get("edge_check") == "text"]
    assert lines and all(x["status"] == 400 for x in lines)


def test_a_nul_in_a_tool_argument_names_the_field_in_a_json_rpc_error(edge, runtime, http):
    user = make_user(runtime)
    body = (
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "save_session",'
        b' "arguments": {"name": "n", "summary": "s", "plan": ["ok", "a\\u0000b"]}}}'
    )
    reply = post(http, edge.url, body, user.key)
    assert reply.status_code == 400
    assert reply.json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -32602,
            "message": "text may not hold a NUL (U+0000) or a lone surrogate (U+D800-U+DFFF):"
            " a NUL (U+0000) in params.arguments.plan[1]",
        },
    }


def test_health_answers_get_and_head_only_and_logs_no_traceback(edge, http, capfd):
    health = edge.url.removesuffix("/mcp") + "/health"
    assert http.get(health).json() == {"ok": True}
    head = http.head(health)
    assert head.status_code == 200 and head.content == b""
    for method in ("CONNECT", "POST", "PUT", "DELETE", "OPTIONS", "TRACE"):
        reply = http.request(method, health)
        assert reply.status_code == 405, (method, reply.status_code)
        assert reply.headers["allow"] == "GET, HEAD"
    assert http.get(health).status_code == 200  # the connection and the server are fine after
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception in ASGI application" not in err
