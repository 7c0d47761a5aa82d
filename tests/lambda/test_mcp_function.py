"""The MCP function under Mangum: cold start, then several warm invocations in one process."""

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


def new_key(admin) -> str:
    import secrets

    user = admin.handler({"action": "create_user", "name": f"u-{secrets.token_hex(4)}"}, LambdaContext())
    key = admin.handler({"action": "create_key", "user_id": user["user_id"], "label": "t"}, LambdaContext())
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
    assert len(body_json(responses[1])["result"]["tools"]) == 5
    loaded = body_json(responses[3])["result"]["structuredContent"]
    assert (loaded["name"], loaded["summary"], loaded["version"]) == ("lambda", "warm", 1)


def test_auth_failures_body_cap_and_malformed_json(functions):
    admin, mcp = functions
    key = new_key(admin)
    unknown = invoke(mcp, rpc("tools/list"), key="sv_live_" + "B" * 32)
    missing = invoke(mcp, rpc("tools/list"))
    assert unknown["statusCode"] == missing["statusCode"] == 401
    assert unknown["body"] == missing["body"]
    assert unknown["headers"]["www-authenticate"] == "Bearer"
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
