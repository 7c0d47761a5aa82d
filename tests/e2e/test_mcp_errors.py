"""End to end, through uvicorn on a real socket: what the caller got wrong outside tools/call
(an unknown prompt, a resource URI that is not ours) is answered as a proper MCP error with our
message, and an unexpected exception in a handler as an internal error; in neither case does
the caller's text, the exception's message or a traceback reach any log: ours, the MCP SDK's,
or anyone's."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from sessionvault.server.mcp import prompts

from ..conftest import make_user
from ..support.logs import catch_logs

HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}


class Everything(logging.Handler):
    """Every record logged anywhere in the process while it is attached, formatted with its
    traceback (if it carries one)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        line = self.format(record) + " " + json.dumps(record.__dict__, default=str)
        with self._lock:
            if any(seen is record for seen in self.records):  # via both loggers it is attached to
                return
            self.records.append(record)
            self.lines.append(line)


@pytest.fixture
def every_log() -> Iterator[Everything]:
    """Attached to the root logger (which the SDK's loggers reach) and to our own (which may
    not propagate), at INFO: what a server that logs more than warnings would write."""
    catcher = Everything()
    loggers = [logging.getLogger(), logging.getLogger("sessionvault")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(catcher)
    logging.getLogger().setLevel(logging.INFO)
    try:
        yield catcher
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(catcher)
            lg.setLevel(level)


MODERN = "2026-07-28"  # no handshake: the protocol version and client rides in each request's _meta


def rpc(
    http: httpx2.Client, url: str, key: str, method: str, params: Any, *, modern: bool = False
) -> dict[str, Any]:
    headers = {**HEADERS, "Authorization": f"Bearer {key}"}
    if modern:
        params = {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "errors-test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }
        headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": method})
        if "name" in params or "uri" in params:  # the tool's or prompt's name, the resource's URI
            headers["Mcp-Name"] = params.get("name") or params["uri"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    reply = http.post(url, json=body, headers=headers)
    # 2026-07-28 answers invalid params with a 400 too
    assert reply.status_code == 200 or (modern and reply.status_code == 400), reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def assert_nothing_leaked(catcher: Everything, *secrets: str) -> None:
    assert catcher.lines, "nothing was logged at all: the catcher is not attached"
    for line in catcher.lines:
        for secret in secrets:
            assert secret not in line, line
        assert "Traceback" not in line, line
    assert not [r for r in catcher.records if r.exc_info or r.exc_text or r.stack_info]


@pytest.mark.parametrize("modern", [False, True], ids=["2025-06-18", MODERN])
def test_an_unknown_prompt_is_an_invalid_params_error_and_its_name_is_logged_nowhere(
    server, runtime, http, every_log, capfd, modern
):
    user = make_user(runtime)
    unique = f"no-such-prompt-{os.urandom(6).hex()}"
    params = {"name": unique, "arguments": {}}
    answer = rpc(http, server.url, user.key, "prompts/get", params, modern=modern)
    error = answer["error"]
    assert error["code"] == -32602  # invalid params; it used to be 0, the SDK's "not an MCP error"
    assert error["message"] == f"unknown prompt '{unique}'; available: handoff, resume"
    # The request's own log line is written just after the answer: wait for it.
    http.get(server.url.removesuffix("/mcp") + "/health")
    out = capfd.readouterr()
    assert_nothing_leaked(every_log, unique)
    assert unique not in out.out and unique not in out.err and "Traceback" not in out.err


def test_a_resource_uri_that_is_not_ours_is_logged_nowhere(server, runtime, http, every_log, capfd):
    user = make_user(runtime)
    unique = f"https://example.com/{os.urandom(6).hex()}"
    answer = rpc(http, server.url, user.key, "resources/read", {"uri": unique})
    # Not found, as a session URI that names nothing is (-32002 before 2026-07-28), with its URI.
    assert answer["error"]["code"] == -32002 and answer["error"]["data"] == {"uri": unique}
    out = capfd.readouterr()
    assert_nothing_leaked(every_log, unique)
    assert unique not in out.out + out.err


@pytest.mark.parametrize("modern", [False, True], ids=["2025-06-18", MODERN])
def test_an_unexpected_exception_in_a_handler_is_an_internal_error_logged_by_type_only(
    server, runtime, http, every_log, capfd, monkeypatch, modern
):
    user = make_user(runtime)
    unique = f"detail-{os.urandom(6).hex()}"

    def broken(repo: str) -> str:
        raise RuntimeError(unique)

    monkeypatch.setattr(prompts, "resume_text", broken)
    params = {"name": "resume", "arguments": {"repo": unique}}
    answer = rpc(http, server.url, user.key, "prompts/get", params, modern=modern)
    assert answer["error"] == {"code": -32603, "message": "internal error"}
    monkeypatch.undo()
    out = capfd.readouterr()
    assert_nothing_leaked(every_log, unique)
    assert unique not in out.out + out.err and "Traceback" not in out.err
    (failed,) = [r for r in every_log.records if r.getMessage() == "mcp handler failed"]
    assert (failed.levelname, failed.method, failed.error_type) == ("ERROR", "prompts/get", "RuntimeError")  # type: ignore[attr-defined]
    assert failed.where.endswith("in broken")  # type: ignore[attr-defined]
    # and the server carries on
    ok = rpc(http, server.url, user.key, "prompts/get", {"name": "resume", "arguments": {}})
    assert "result" in ok


@pytest.mark.parametrize("modern", [False, True], ids=["2025-06-18", MODERN])
def test_an_unknown_tool_is_a_json_rpc_error_not_a_result(server, runtime, http, capfd, modern):
    """MCP (server/tools, error handling): an unknown tool is a protocol error, -32602; it was
    answered as a result with isError: true, which a model reads as the tool's own output."""
    user = make_user(runtime)
    params = {"name": "no_such_tool", "arguments": {}}
    with catch_logs() as logs:
        answer = rpc(http, server.url, user.key, "tools/call", params, modern=modern)
        assert "result" not in answer
        assert answer["error"]["code"] == -32602
        assert answer["error"]["message"].startswith("unknown tool 'no_such_tool'; available: save_session")
        assert "checkpoint_session" not in answer["error"]["message"]  # a hidden tool is never named
        lines = logs.requests_until(lambda lines: any(x.get("user_id") == user.id for x in lines))
    assert [x.get("error_class") for x in lines if x.get("user_id") == user.id] == ["validation"]
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(("modern", "code"), [(False, -32002), (True, -32602)], ids=["2025-06-18", MODERN])
def test_a_missing_resource_names_its_uri_with_the_code_of_its_protocol(server, runtime, http, modern, code):
    """-32002 with data.uri up to 2025-11-25; from 2026-07-28 (SEP-2164) -32602, data.uri still."""
    user = make_user(runtime)
    uri = "sessionvault://sessions/no-such-session"
    answer = rpc(http, server.url, user.key, "resources/read", {"uri": uri}, modern=modern)
    assert answer["error"] == {
        "code": code,
        "message": "resource not found: no session by that name",
        "data": {"uri": uri},
    }
