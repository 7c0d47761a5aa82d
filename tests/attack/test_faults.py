"""Faults: the database's connections killed between and during requests, KMS failing, the
embedding provider down. The client must get a 503 or a tool error that says to try again,
never a 500 or an "internal" error; the server must recover by itself; nothing acknowledged
may be lost."""

from __future__ import annotations

import importlib
import json
import random
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import botocore.exceptions
import httpx2
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from sessionvault.core.records import embedding_text
from sessionvault.jobs import maintenance
from sessionvault.runtime import Runtime, open_runtime
from sessionvault.server.app import SessionVaultApp

from ..conftest import ServerThread, User, free_port
from ..support.logs import catch_logs
from .conftest import EMBED_MODEL, GENERATED, attack_settings
from .support import PROTOCOL_VERSION, AsgiClient, FakeEmbeddings, mcp_headers, tool_call

TAG = "sv-attack-faults"  # application_name of the serving pool: only its backends get killed
UNAVAILABLE = 503


# ---------------------------------------------------------------------------------------------
# (a) The database's connections killed


@pytest.fixture(scope="module")
def fault_runtime(pg, fake_embeddings) -> Iterator[Runtime]:
    url = make_conninfo(pg.app_url, application_name=TAG)
    rt = open_runtime(attack_settings(pg, fake_embeddings.base_url, database_url=url, embeddings="none"))
    yield rt
    rt.close()


@pytest.fixture(scope="module")
def fault_server(fault_runtime: Runtime) -> Iterator[ServerThread]:
    with ServerThread(fault_runtime) as server:
        yield server


@pytest.fixture
def owner(pg) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:
        yield conn


def kill(owner: psycopg.Connection[Any], *, waiting: bool = False, one: bool = False) -> list[int]:
    """Terminate the serving pool's backends (only those waiting on a lock, if `waiting`; one
    picked at random, if `one`); their process ids."""
    where = " AND wait_event_type = 'Lock'" if waiting else ""
    pick = " ORDER BY random() LIMIT 1" if one else ""
    # pg_terminate_backend in the select list, never in a WHERE: the planner may evaluate a
    # WHERE clause's terms in any order, before the filter on application_name.
    rows = owner.execute(
        "SELECT pid, pg_terminate_backend(pid) FROM (SELECT pid FROM pg_stat_activity"
        f" WHERE application_name = %s AND pid <> pg_backend_pid(){where}{pick}) AS doomed",
        (TAG,),
    ).fetchall()
    return [pid for pid, killed in rows if killed]


def wait_for_lock_waiter(owner: psycopg.Connection[Any], gone: set[int], timeout: float = 10.0) -> int:
    """The pid of a serving backend waiting on a lock, other than those in `gone` (a killed
    backend lingers in pg_stat_activity for a moment)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = owner.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND wait_event_type = 'Lock'",
            (TAG,),
        ).fetchall()
        fresh = [pid for (pid,) in rows if pid not in gone]
        if fresh:
            return fresh[0]
        time.sleep(0.01)
    raise AssertionError("no request of the server ever waited on the lock")


def kill_waiter(owner: psycopg.Connection[Any], gone: set[int]) -> None:
    pid = wait_for_lock_waiter(owner, gone)
    assert owner.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
    gone.add(pid)


class Client:
    """Raw JSON-RPC tools/call over real HTTP; one httpx2 client per thread."""

    def __init__(self, url: str, user: User) -> None:
        self.url, self.user = url, user
        self.local = threading.local()

    def call(self, tool: str, args: dict[str, Any]) -> tuple[int, dict[str, Any] | None, str]:
        """(HTTP status, the tool result if there is one, the reply text)."""
        http = getattr(self.local, "http", None)
        if http is None:
            http = self.local.http = httpx2.Client(timeout=60)
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": args},
        }
        reply = http.post(
            self.url,
            content=json.dumps(body),
            headers={
                "Authorization": f"Bearer {self.user.key}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": PROTOCOL_VERSION,
            },
        )
        result = reply.json().get("result") if reply.status_code == 200 else None
        return reply.status_code, result, reply.text

    def ok(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        status, result, text = self.call(tool, args)
        assert status == 200 and result is not None and not result["isError"], (tool, status, text)
        content: dict[str, Any] = result["structuredContent"]
        return content


def recover(client: Client, attempts: int = 10) -> int:
    """Call until a call succeeds; how many 503s that took. A test starts with this, so that
    the state an earlier test left the pool in (killed connections) cannot decide it: the
    very first call must succeed already (test_the_very_next_request_...), but that is
    asserted there, once."""
    for failed in range(attempts):
        status, _, text = client.call("list_sessions", {"limit": 1})
        if status == 200:
            return failed
        assert status == UNAVAILABLE, (status, text)
    raise AssertionError(f"still no success after {attempts} calls")


def acceptable(status: int, result: dict[str, Any] | None, text: str) -> bool:
    """A 503, a success, or a tool error that tells the client to try again."""
    if status == UNAVAILABLE:
        return True
    if status != 200 or result is None:
        return False
    return not result["isError"] or "try again" in result["content"][0]["text"]


def no_internal(lines: list[dict[str, Any]]) -> None:
    requests = [line for line in lines if line.get("message") == "request"]
    assert requests, "no request was logged"
    internal = [line for line in requests if line.get("error_class") == "internal"]
    assert not internal, internal[:3]


def _grow_and_kill(client: Client, owner: psycopg.Connection[Any]) -> int:
    with ThreadPoolExecutor(8) as pool:  # several pooled connections, all about to die idle
        list(pool.map(lambda _: client.ok("list_sessions", {}), range(16)))
    killed = len(kill(owner))
    assert killed >= 2
    return killed


def test_connections_killed_between_requests_the_server_recovers(
    fault_server, fault_runtime, new_user, owner
) -> None:
    """Every pooled connection dies while idle (a failover, a restart, a proxy's idle cut):
    requests answer 503 at worst, the server recovers by itself within a few requests, and
    what was saved before is there."""
    client = Client(fault_server.url, new_user(fault_runtime))
    recover(client)
    with catch_logs() as logs:
        assert client.ok("save_session", {"name": "between", "summary": "v1"})["version"] == 1
        for round_ in range(3):
            killed = _grow_and_kill(client, owner)
            answers = []
            for _ in range(killed + 1):  # each answer spends at most two dead connections
                status, result, text = client.call("save_session", {"name": "between", "summary": "again"})
                assert acceptable(status, result, text), (status, text)
                answers.append(status)
                if status == 200:
                    break
            assert answers[-1] == 200, (round_, killed, answers)
        assert client.ok("load_session", {"name": "between", "version": 1})["summary"] == "v1"
    no_internal(logs.lines)


def test_the_very_next_request_after_idle_connections_die_succeeds(
    fault_server, fault_runtime, new_user, owner
) -> None:
    """Found by this tier: Database.first_use retried once, on a second dead pooled
    connection, so the next request after a failover got a 503 (one per two dead ones)."""
    client = Client(fault_server.url, new_user(fault_runtime))
    recover(client)
    _grow_and_kill(client, owner)
    status, _, text = client.call("list_sessions", {})
    assert status == 200, (status, text)


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


@pytest.mark.parametrize("riding", [True, False], ids=["riding", "own flight"])
@pytest.mark.parametrize("kills", [1, 2])
def test_connection_killed_while_admission_waits(
    fault_server, fault_runtime, new_user, owner, kills, riding
) -> None:
    """Admission waits on the user's rate-limit lock (held here by the owner) and its backend
    is killed: once, the request is retried on a fresh connection and succeeds; twice, a 503,
    or, when the admission rode on the save's transaction (the server admitted this user a
    moment ago), the save's "try again"; nothing saved either way."""
    user = new_user(fault_runtime)
    client = Client(fault_server.url, user)
    recover(client)
    with catch_logs() as logs:
        client.ok("list_sessions", {})
        if not riding:  # as on a fresh instance: the server admits the call in a flight of its own
            fault_server.server.config.app.admitter.known._entries.clear()
        owner.execute("SELECT pg_advisory_lock(hashtextextended(%s || '/tool', 7))", (user.id,))
        try:
            thread, out = in_thread(lambda: client.call("save_session", {"name": "admit", "summary": "s"}))
            gone: set[int] = set()
            for _ in range(kills):
                kill_waiter(owner, gone)
            if kills == 1:
                wait_for_lock_waiter(owner, gone)  # the retry queues up behind the lock again
        finally:
            owner.execute("SELECT pg_advisory_unlock_all()")
        thread.join(30)
        status, result, text = out[0]
        if kills == 1:
            assert status == 200 and result is not None and not result["isError"], text
        elif riding:
            assert status == 200 and result is not None and result["isError"], text
            assert "try again" in result["content"][0]["text"]
        else:
            assert status == UNAVAILABLE, text
        assert client.ok("save_session", {"name": "admit", "summary": "after"})["version"] == (
            2 if kills == 1 else 1
        )
    no_internal(logs.lines)


@pytest.mark.parametrize("kills", [1, 2])
def test_connection_killed_while_a_save_waits(fault_server, fault_runtime, new_user, owner, kills) -> None:
    """A save waits on its session's row lock (held here by the owner) and its backend is
    killed: once, the save is retried on a fresh connection and lands once; twice, the tool
    answers "try again", and nothing of that save was committed."""
    user = new_user(fault_runtime)
    client = Client(fault_server.url, user)
    recover(client)
    with catch_logs() as logs:
        assert client.ok("save_session", {"name": "row", "summary": "v1"})["version"] == 1
        locker = psycopg.connect(owner.info.dsn, autocommit=False)
        try:
            locker.execute(
                "SELECT 1 FROM sessions WHERE user_id = %s AND name = 'row' FOR UPDATE", (user.id,)
            )
            thread, out = in_thread(lambda: client.call("save_session", {"name": "row", "summary": "v2"}))
            gone: set[int] = set()
            for _ in range(kills):
                kill_waiter(owner, gone)
            if kills == 1:
                wait_for_lock_waiter(owner, gone)  # the retry queues up behind the lock again
        finally:
            locker.rollback()
            locker.close()
        thread.join(30)
        status, result, text = out[0]
        assert status == 200 and result is not None, text
        if kills == 1:
            assert not result["isError"] and result["structuredContent"]["version"] == 2, text
        else:
            assert result["isError"] and "try again" in result["content"][0]["text"], text
        after = client.ok("save_session", {"name": "row", "summary": "v3"})
        assert after["version"] == (3 if kills == 1 else 2)  # a killed save added no version
        assert client.ok("load_session", {"name": "row", "version": 1})["summary"] == "v1"
    no_internal(logs.lines)
    if kills == 2:
        (error_class,) = owner.execute(
            "SELECT error_class FROM audit_events WHERE user_id = %s AND outcome = 'error'", (user.id,)
        ).fetchone()
        assert error_class == "db"


STORM_WORKERS, STORM_OPS, STORM_NAMES, KILL_EVERY = 4, 140, 7, 5


def test_a_storm_of_killed_connections(fault_server, fault_runtime, new_user, owner) -> None:
    """Kills at random moments while four clients save, load and list: every answer is a
    success, a 503 or a "try again"; every save that answered saved:true loads back afterwards.

    The storm is bounded by work, not time (a fast machine once wrote more versions of a name
    than history keeps, and the test read a legitimate prune as a loss): each worker makes
    STORM_OPS calls over STORM_NAMES names of its own, so no name can be saved more often than
    history keeps, and a kill is triggered every KILL_EVERY calls, however fast they run."""
    saves_per_name = -(-STORM_OPS // STORM_NAMES)
    assert saves_per_name <= fault_runtime.settings.history_keep + 1  # every version stays loadable
    client = Client(fault_server.url, new_user(fault_runtime))
    recover(client)
    stop, trigger = threading.Event(), threading.Semaphore(0)
    kills = 0

    def killer() -> None:
        nonlocal kills
        rng = random.Random(7)
        with psycopg.connect(owner.info.dsn, autocommit=True) as conn:
            while not stop.is_set():
                if trigger.acquire(timeout=0.05):
                    time.sleep(rng.uniform(0, 0.02))  # lands mid-request, or between requests
                    kills += len(kill(conn, one=rng.random() < 0.7))

    acknowledged: list[tuple[str, int, str]] = []
    answers: dict[str, int] = {}

    def worker(n: int) -> None:
        rng = random.Random(n)
        for i in range(STORM_OPS):
            if i % KILL_EVERY == 0:
                trigger.release()
            name = f"storm-{n}-{i % STORM_NAMES}"
            roll = rng.random()
            if roll < 0.5:
                summary = f"{n}/{i}"
                status, result, text = client.call("save_session", {"name": name, "summary": summary})
                if status == 200 and result and not result["isError"]:
                    acknowledged.append((name, result["structuredContent"]["version"], summary))
            elif roll < 0.8:
                status, result, text = client.call("load_session", {"name": name})
            else:
                status, result, text = client.call("list_sessions", {"limit": 5})
            assert acceptable(status, result, text), (status, text[:300])
            kind = "503" if status == UNAVAILABLE else ("retry" if result and result["isError"] else "ok")
            answers[kind] = answers.get(kind, 0) + 1

    with catch_logs() as logs:
        storm = threading.Thread(target=killer, daemon=True)
        storm.start()
        try:
            with ThreadPoolExecutor(STORM_WORKERS) as pool:
                list(pool.map(worker, range(STORM_WORKERS)))
        finally:
            stop.set()
            storm.join(10)
        GENERATED["fault storm"] = sum(answers.values())
        assert sum(answers.values()) == STORM_WORKERS * STORM_OPS
        assert kills >= 10 and answers.get("ok", 0) >= 20, (kills, answers)
        client.ok("list_sessions", {})  # the next request succeeds, with no restart
        for name, version, summary in acknowledged:  # nothing acknowledged was lost
            loaded = client.ok("load_session", {"name": name, "version": version})
            assert loaded["found"] and loaded["summary"] == summary, (name, version, loaded)
    no_internal(logs.lines)


# ---------------------------------------------------------------------------------------------
# (b) KMS failing: the MCP Lambda function under moto, its Decrypt made to fail

_lambda = importlib.import_module("tests.lambda.conftest")
aws = _lambda.aws  # the moto account fixture of the Lambda tests


def _client_error(code: str) -> Exception:
    return botocore.exceptions.ClientError({"Error": {"Code": code, "Message": "test"}}, "Decrypt")


KMS_FAILURES = {
    "internal": lambda: _client_error("KMSInternalException"),
    "disabled": lambda: _client_error("DisabledException"),
    "throttled": lambda: _client_error("ThrottlingException"),
    "unreachable": lambda: botocore.exceptions.EndpointConnectionError(endpoint_url="https://kms.example"),
}


class FailingKms:
    """The real (moto) KMS client, except that Decrypt raises while `failing`."""

    def __init__(self, real: Any, error: Callable[[], Exception]) -> None:
        self.real, self.error, self.failing = real, error, True

    def decrypt(self, **kwargs: Any) -> Any:
        if self.failing:
            raise self.error()
        return self.real.decrypt(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _mcp_call(mcp: Any, key: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}
    )
    event = _lambda.http_event(body, key=key, **{"mcp-protocol-version": PROTOCOL_VERSION})
    response: dict[str, Any] = mcp.handler(event, _lambda.LambdaContext())
    return response


@pytest.fixture
def kms_stack(aws) -> Iterator[tuple[Any, str, str]]:
    """A cold MCP function, and a user (with a KMS-wrapped key) made by the admin function."""
    admin, mcp = _lambda.load_handler("admin"), _lambda.load_handler("mcp")
    ctx = _lambda.LambdaContext()
    user = admin.handler({"action": "create_user", "name": f"kms-{secrets.token_hex(4)}"}, ctx)
    key = admin.handler({"action": "create_key", "user_id": user["user_id"], "scopes": "read,write"}, ctx)[
        "key"
    ]
    yield mcp, key, user["user_id"]
    mcp.handler.app.rt.close()  # their pools, now rather than whenever garbage collection runs
    admin.RUNTIME.close()


def _fail_kms(mcp: Any, failure: str) -> FailingKms:
    provider = mcp.handler.app.rt.keys.provider
    failing = FailingKms(provider.client, KMS_FAILURES[failure])
    provider._client = failing
    mcp.handler.app.rt.keys.clear()  # a cold cache: the call must ask KMS
    return failing


def _kms_outcome(mcp: Any, key: str, tool: str) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    args = {"name": "k", "summary": "s"} if tool == "save_session" else {"name": "k"}
    with catch_logs() as logs:
        response = _mcp_call(mcp, key, tool, args)
    requests = [line for line in logs.lines if line.get("message") == "request"]
    return response["statusCode"], _lambda.body_json(response), requests


@pytest.mark.parametrize("failure", sorted(KMS_FAILURES))
@pytest.mark.parametrize("tool", ["save_session", "load_session"])
def test_kms_failing_is_answered_as_unavailable(pg, kms_stack, tool, failure) -> None:
    """A 503 or a tool error saying to try again, classed (log line and audit row alike) as
    anything but "internal"; once KMS is back, the same warm function serves again.

    Found by this tier: a Decrypt failure used to escape the dispatcher's known errors and be
    answered "internal error" with error class internal (the log line naming ClientError)."""
    mcp, key, user_id = kms_stack
    if tool == "load_session":  # a session to open: a load of a missing one needs no key at all
        _kms_outcome(mcp, key, "save_session")
    failing = _fail_kms(mcp, failure)
    status, body, requests = _kms_outcome(mcp, key, tool)
    assert status == UNAVAILABLE or (status == 200 and body["result"]["isError"]), (status, body)
    assert len(requests) == 1 and requests[0]["status"] == status
    error_class = requests[0].get("error_class")
    with psycopg.connect(pg.owner_url) as conn:
        (audited,) = conn.execute(
            "SELECT error_class FROM audit_events WHERE user_id = %s ORDER BY id DESC LIMIT 1", (user_id,)
        ).fetchone()
    assert error_class not in (None, "internal") and audited == error_class, (error_class, audited)
    if status == 200:
        text = body["result"]["content"][0]["text"]
        assert "try again" in text, text
    failing.failing = False  # KMS is back: no restart needed
    status, body, _ = _kms_outcome(mcp, key, tool)
    assert status == 200 and not body["result"]["isError"], body


# ---------------------------------------------------------------------------------------------
# (c) The embedding provider down, then back


@pytest.fixture
def provider_down(pg) -> Iterator[tuple[FakeEmbeddings, Runtime, Runtime]]:
    """A provider that is down (nothing listens on its port); the serving runtime that uses it,
    and the maintenance job's (admin role, as the maintenance function connects)."""
    provider = FakeEmbeddings(free_port())
    serving = open_runtime(attack_settings(pg, provider.base_url, embed_timeout_s=1.0))
    job = open_runtime(attack_settings(pg, provider.base_url, database_url=pg.admin_url))
    yield provider, serving, job
    provider.down()
    serving.close()
    job.close()


def test_saves_are_kept_while_the_provider_is_down_and_reembedded_later(
    provider_down, new_user, owner
) -> None:
    provider, serving, job = provider_down
    user = new_user(serving)
    client = AsgiClient(SessionVaultApp(serving))
    records = {
        "down-a": {"name": "down-a", "repo": "github.com/acme/app", "summary": "kafka consumer lag"},
        "down-b": {"name": "down-b", "summary": "graphql schema stitching", "plan": ["merge", "ship"]},
        "down-c": {"name": "down-c", "summary": "first version"},
    }
    second = {"name": "down-c", "summary": "second version", "todos": ["re-run the migration"]}

    def call(tool: str, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        body = tool_call(tool, args)
        with catch_logs() as logs:
            reply = client.request(body, mcp_headers(user.key, body))
        result = reply.tool_result()
        return result, logs.last_request()

    try:
        for args in [*records.values(), second]:
            result, log = call("save_session", args)
            assert not result["isError"], result
            assert result["structuredContent"]["embedded"] is False
            assert log.get("error_class") is None
        # Search answers by the words alone while the provider is down, and says so (issue 36);
        # a query with no word to match has nothing to go on.
        result, log = call("search_sessions", {"query": "kafka"})
        assert not result["isError"] and log.get("error_class") is None, (result, log)
        assert [h["name"] for h in result["structuredContent"]["results"]] == ["down-a"]
        assert "words only" in result["structuredContent"]["notice"]
        result, log = call("search_sessions", {"query": "the"})
        assert result["isError"] and log.get("error_class") == "provider", (result, log)
        assert "list_sessions and load_session still work" in result["content"][0]["text"]
        loaded, _ = call("load_session", {"name": "down-c"})
        assert loaded["structuredContent"]["summary"] == "second version"
        (missing,) = owner.execute(
            "SELECT count(*) FROM sessions WHERE user_id = %s AND sealed_vector IS NULL", (user.id,)
        ).fetchone()
        assert missing == 3

        provider.up()
        for _ in range(5):  # other users' stale rows may share a batch: run until ours are done
            maintenance.reembed(job, batch=500)
            (missing,) = owner.execute(
                "SELECT count(*) FROM sessions WHERE user_id = %s"
                " AND (sealed_vector IS NULL OR embedding_model IS DISTINCT FROM %s)",
                (user.id, f"openai:{EMBED_MODEL}"),
            ).fetchone()
            if missing == 0:
                break
        assert missing == 0
        # each vector is that of its session's head version: an exact query finds it first
        for args in [records["down-a"], records["down-b"], second]:
            query = embedding_text(
                {
                    "plan": [],
                    "todos": [],
                    "tried": [],
                    "decisions": [],
                    "errors": [],
                    "files": [],
                    "repo": "",
                    **args,
                }
            )
            result, _ = call("search_sessions", {"query": query, "max_results": 3})
            hits = result["structuredContent"]["results"]
            assert hits[0]["name"] == args["name"] and hits[0]["score"] > 0.999, (args["name"], hits)
        result, _ = call("save_session", {"name": "down-d", "summary": "provider is back"})
        assert result["structuredContent"]["embedded"] is True
    finally:
        client.close()


# ---------------------------------------------------------------------------------------------
# (d) A crowd past the local server's bound (issue 29: back-pressure)


def test_a_crowd_past_the_bound_gets_200_or_503_and_every_acknowledged_save_is_kept(
    fault_runtime, new_user
) -> None:
    """The local server as `sessionvault dev` builds it (the gate, the listener), with a bound
    small enough for a crowd to pass it: every answer is a 200 or a 503 with Retry-After (never a
    500, never a hang), and every save answered 200 loads afterwards, byte for byte. The work is
    bounded (rounds), not the time."""
    from sessionvault.local.host import listener, pressure, statelock

    gate = pressure.Gate(SessionVaultApp(fault_runtime), active=2, waiting=2, wait_s=0.5)
    sock = statelock.bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = listener.build(gate, "127.0.0.1", port, log_level="warning")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    users = [new_user(fault_runtime) for _ in range(4)]
    acknowledged: dict[tuple[str, str], str] = {}
    answers: list[int] = []
    lock = threading.Lock()
    url = f"http://127.0.0.1:{port}/mcp"

    def post(http: httpx2.Client, key: str, tool: str, arguments: dict[str, Any]) -> httpx2.Response:
        body = tool_call(tool, arguments)
        headers = {k.decode(): v.decode() for k, v in mcp_headers(key, body) if k != b"host"}
        return http.post(url, content=body, headers=headers)

    def client(n: int) -> None:
        user = users[n % len(users)]
        with httpx2.Client(timeout=60) as http:
            for i in range(6):
                name, summary = f"crowd-{n}-{i}", f"client {n} round {i} {secrets.token_hex(4)}"
                reply = post(http, user.key, "save_session", {"name": name, "summary": summary})
                with lock:
                    answers.append(reply.status_code)
                if reply.status_code == 503:
                    assert int(reply.headers["retry-after"]) >= 1
                    continue
                assert reply.status_code == 200, reply.text
                if reply.json()["result"]["structuredContent"].get("saved"):
                    with lock:
                        acknowledged[(user.key, name)] = summary

    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        with ThreadPoolExecutor(max_workers=24) as pool:
            list(pool.map(client, range(24)))
        assert set(answers) <= {200, 503} and len(answers) == 24 * 6
        assert acknowledged
        with httpx2.Client(timeout=60) as http:
            for (key, name), summary in acknowledged.items():
                while (reply := post(http, key, "load_session", {"name": name})).status_code == 503:
                    time.sleep(0.05)
                assert reply.json()["result"]["structuredContent"]["summary"] == summary, name
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    # Every place given back: read once the server has stopped (it drains what is in flight), not
    # the moment the last answer arrives (the gate's place is given back just after it is sent).
    assert gate.busy == 0 and not gate.queue
