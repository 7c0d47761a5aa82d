"""The MCP function under Mangum: cold start, then several warm invocations in one process."""

import base64
import json
import logging

import pytest

from sessionvault.errors import ConfigError

from .conftest import LambdaContext, body_json, http_event, load_handler, rpc

MCP_HEADERS = {"mcp-protocol-version": "2025-06-18"}


@pytest.fixture
def functions(aws):
    """The admin and MCP functions of one deployed stack."""
    return load_handler("admin"), load_handler("mcp")


def new_key(admin, scopes: str = "read,write") -> str:
    import secrets

    user = admin.handler({"action": "create_user", "name": f"u-{secrets.token_hex(4)}"}, LambdaContext())
    ask = {"action": "create_key", "user_id": user["user_id"], "label": "t", "scopes": scopes}
    key = admin.handler(ask, LambdaContext())
    return key["key"]


def invoke(mcp, body, **kwargs):
    return mcp.handler(http_event(body, **MCP_HEADERS, **kwargs), LambdaContext())


def test_first_and_every_warm_call_answer(functions):
    admin, mcp = functions
    key = new_key(admin)
    init = rpc(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    )
    responses = [
        invoke(mcp, init, key=key),
        invoke(mcp, rpc("tools/list"), key=key),
        invoke(
            mcp,
            rpc("tools/call", {"name": "save_session", "arguments": {"name": "lambda", "summary": "warm"}}),
            key=key,
        ),
        invoke(mcp, rpc("tools/call", {"name": "load_session", "arguments": {"name": "lambda"}}), key=key),
        invoke(mcp, rpc("tools/list"), key=key),
    ]
    assert [r["statusCode"] for r in responses] == [200] * 5
    assert body_json(responses[0])["result"]["serverInfo"]["name"] == "sessionvault"
    # a new key is read+write: tools/list shows only what it may call (no deletes)
    names = {t["name"] for t in body_json(responses[1])["result"]["tools"]}
    assert names == {"save_session", "load_session", "search_sessions", "list_sessions"}
    loaded = body_json(responses[3])["result"]["structuredContent"]
    assert (loaded["name"], loaded["summary"], loaded["version"]) == ("lambda", "warm", 1)


def test_auth_failures_body_cap_and_malformed_json(functions):
    admin, mcp = functions
    key = new_key(admin)
    unknown = invoke(mcp, rpc("tools/list"), key="sv_live_" + "B" * 32)
    missing = invoke(mcp, rpc("tools/list"))
    assert unknown["statusCode"] == missing["statusCode"] == 401
    assert unknown["body"] == missing["body"]
    challenge = unknown["headers"]["www-authenticate"]
    assert challenge == missing["headers"]["www-authenticate"]
    assert challenge.startswith('Bearer resource_metadata="https://')
    assert challenge.endswith('/.well-known/oauth-protected-resource/mcp"')
    assert invoke(mcp, b"x" * 1_048_577, key=key)["statusCode"] == 413
    assert invoke(mcp, "{oops", key=key)["statusCode"] == 400
    assert invoke(mcp, rpc("tools/list"), key=key)["statusCode"] == 200  # still healthy after all that


def test_rate_limit_gives_429_with_retry_after(aws, monkeypatch):
    monkeypatch.setenv("SESSIONVAULT_RATE_PER_MINUTE", "2")
    admin, mcp = load_handler("admin"), load_handler("mcp")
    key = new_key(admin)
    call = rpc("tools/call", {"name": "list_sessions", "arguments": {}})
    codes = [invoke(mcp, call, key=key) for _ in range(3)]
    assert [r["statusCode"] for r in codes] == [200, 200, 429]
    assert invoke(mcp, rpc("tools/list"), key=key)["statusCode"] == 200  # the protocol budget is apart
    assert int(codes[-1]["headers"]["retry-after"]) >= 1
    assert body_json(codes[-1])["window"] == "minute"


def test_the_api_gateway_host_needs_the_allowed_hosts_setting(aws, monkeypatch):
    admin = load_handler("admin")
    key = new_key(admin)
    monkeypatch.delenv("SESSIONVAULT_ALLOWED_HOSTS")  # the loopback default: the 421 trap
    strict = load_handler("mcp")
    assert invoke(strict, rpc("tools/list"), key=key)["statusCode"] == 421


def test_one_structured_log_line_per_request_with_the_gateway_request_id(functions, capfd):
    admin, mcp = functions
    key = new_key(admin)
    event = http_event(rpc("tools/list"), key=key, **MCP_HEADERS)
    mcp.handler(event, LambdaContext())
    lines = [json.loads(line) for line in capfd.readouterr().out.splitlines() if line.startswith("{")]
    logs = [line for line in lines if line.get("message") == "request"]
    assert len(logs) == 1
    assert logs[0]["correlation_id"] == event["requestContext"]["requestId"]
    assert (logs[0]["tool"], logs[0]["status"], logs[0]["outcome"]) == ("tools/list", 200, "ok")
    assert key not in json.dumps(lines) and "203.0.113.9" not in json.dumps(lines)
    metrics = [line for line in lines if "_aws" in line]  # CloudWatch embedded metric format
    assert len(metrics) == 1
    assert metrics[0]["tool"] == "tools/list" and metrics[0]["Requests"] == [1.0]


def test_a_misconfigured_function_refuses_to_serve(aws, monkeypatch, caplog):
    monkeypatch.delenv("SESSIONVAULT_AUDIT_SALT_SECRET")
    monkeypatch.setenv("SESSIONVAULT_KMS_KEY_ID", "CHANGE_ME")
    with caplog.at_level(logging.ERROR), pytest.raises(ConfigError, match="2 configuration problem"):
        load_handler("mcp")


def test_a_connection_broken_between_invocations_is_reopened(functions, pg):
    import psycopg

    admin, mcp = functions
    key = new_key(admin)
    assert invoke(mcp, rpc("tools/list"), key=key)["statusCode"] == 200
    # What a frozen container or a pooler restart does: the server side of the socket goes away.
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE usename = 'sessionvault_app' AND pid <> pg_backend_pid()"
        ).fetchone()[0]
    assert killed >= 1
    assert invoke(mcp, rpc("tools/list"), key=key)["statusCode"] == 200


def request_output(capfd) -> tuple[list[dict], list[dict]]:
    """The request log lines and the metric blobs (CloudWatch embedded metric format) printed."""
    lines = [json.loads(line) for line in capfd.readouterr().out.splitlines() if line.startswith("{")]
    return [x for x in lines if x.get("message") == "request"], [x for x in lines if "_aws" in x]


def metric_names(blob: dict) -> set[str]:
    return {m["Name"] for d in blob["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]}


def test_a_refused_key_is_counted_in_the_log_and_a_metric_not_stored(functions, pg, capfd):
    admin, mcp = functions
    new_key(admin)  # the function up and one user in place
    capfd.readouterr()
    event = http_event(rpc("tools/list"), key="sv_live_" + "D" * 32, **MCP_HEADERS)
    assert mcp.handler(event, LambdaContext())["statusCode"] == 401
    logs, metrics = request_output(capfd)
    assert len(logs) == 1 and logs[0]["auth_reason"] == "unknown_key" and logs[0]["status"] == 401
    (failure,) = [m for m in metrics if "AuthFailures" in metric_names(m)]
    assert failure["reason"] == "unknown_key" and failure["AuthFailures"] == [1.0]
    assert any("Requests" in metric_names(m) for m in metrics)  # the tool series, as for every call
    import psycopg

    request_id = event["requestContext"]["requestId"]
    with psycopg.connect(pg.owner_url) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM audit_events WHERE request_id = %s", (request_id,)
        ).fetchone()
    assert rows == (0,)


def test_the_edge_refuses_before_the_body_and_says_so_in_a_metric(functions, capfd):
    admin, mcp = functions
    key = new_key(admin)
    capfd.readouterr()
    plain = invoke(mcp, rpc("tools/list"), key=key, content_type="text/plain")
    browser = invoke(mcp, rpc("tools/list"), key=key, origin="https://attacker.example")
    assert (plain["statusCode"], browser["statusCode"]) == (415, 403)
    logs, metrics = request_output(capfd)
    assert [x["edge_check"] for x in logs] == ["content_type", "origin"]
    refusals = [m for m in metrics if "EdgeRefusals" in metric_names(m)]
    assert [m["check"] for m in refusals] == ["content_type", "origin"]
    # Behind API Gateway any Host is the API's own, and a failing address is not held off per
    # instance: a burst of bad keys is 401s, never 429s.
    codes = {invoke(mcp, rpc("tools/list"), key="sv_live_" + "E" * 32)["statusCode"] for _ in range(40)}
    assert codes == {401}


def test_an_unexpected_exception_is_a_500_with_its_log_line_and_metrics(functions, monkeypatch, capfd):
    from sessionvault.server.admission import admitter as auth

    admin, mcp = functions
    key = new_key(admin)
    capfd.readouterr()

    def broken(*args):
        raise RuntimeError("secret-detail")

    monkeypatch.setattr(auth.Admitter, "admit", broken)
    reply = invoke(mcp, rpc("tools/list"), key=key)
    monkeypatch.undo()
    assert reply["statusCode"] == 500 and body_json(reply) == {"error": "internal error"}
    logs, metrics = request_output(capfd)
    assert (logs[0]["failure"], logs[0]["error_class"], logs[0]["status"]) == (
        "RuntimeError",
        "internal",
        500,
    )
    assert metrics[0]["Errors"] == [1.0]
    assert invoke(mcp, rpc("tools/list"), key=key)["statusCode"] == 200  # the next call is fine


def test_the_http_api_answers_through_mangum_with_gateway_events(functions):
    """/api/v1 on Lambda: a save over MCP, then the API lists, gets and exports it (NDJSON,
    buffered whole by Mangum), over several warm invocations of one instance."""
    admin, mcp = functions
    key = new_key(admin, "read,checkpoint")  # the hooks' kind of key
    checkpoint = {"name": "auto/x/1", "summary": "api", "client": "x"}
    saved = invoke(
        mcp,
        rpc("tools/call", {"name": "checkpoint_session", "arguments": checkpoint}),
        key=key,
    )
    assert saved["statusCode"] == 200

    def get(path: str, query: str = "") -> dict:
        event = http_event(b"", key=key, method="GET", path=path)
        event["rawQueryString"] = query
        return mcp.handler(event, LambdaContext())

    listed = get("/api/v1/sessions")
    assert listed["statusCode"] == 200 and [s["name"] for s in body_json(listed)["sessions"]] == ["auto/x/1"]
    one = get("/api/v1/session", "name=auto%2Fx%2F1")
    assert body_json(one)["summary"] == "api"
    exported = get("/api/v1/export")
    assert exported["statusCode"] == 200 and exported["headers"]["content-type"] == "application/x-ndjson"
    # Not a text type to Mangum: base64 in the event answer, which API Gateway decodes.
    raw = base64.b64decode(exported["body"]) if exported.get("isBase64Encoded") else exported["body"].encode()
    lines = [json.loads(line) for line in raw.splitlines()]
    assert lines[0]["format"] == "sessionvault-export/1" and lines[1]["name"] == "auto/x/1"
    denied = mcp.handler(http_event(b"", method="GET", path="/api/v1/sessions"), LambdaContext())
    assert denied["statusCode"] == 401 and "www-authenticate" in denied["headers"]
