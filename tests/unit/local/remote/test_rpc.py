"""The laptop side's MCP caller: the JSON-RPC request body, and reading a tools/call answer
whether it comes as JSON or as an SSE stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessionvault.errors import ConfigError, ToolCallFailed
from sessionvault.local.remote.rpc import Reply, require_safe_url, rpc_body, tool_result

STRUCTURED = {"found": True, "name": "auth-jwt", "version": 2}


def result(structured: Any = STRUCTURED, **extra: Any) -> dict[str, Any]:
    content = [{"type": "text", "text": json.dumps(structured)}]
    return {"content": content, "structuredContent": structured, "isError": False, **extra}


def message(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, **fields}).encode()


def as_json(body: bytes) -> Reply:
    return Reply(200, body, "application/json")


def as_sse(*events: bytes, content_type: str = "text/event-stream") -> Reply:
    stream = b"".join(b"event: message\ndata: " + event + b"\n\n" for event in events)
    return Reply(200, stream, content_type)


def failure(reply: Reply) -> str:
    """The message of the ToolCallFailed that reading this reply raises."""
    with pytest.raises(ToolCallFailed) as caught:
        tool_result(reply)
    return str(caught.value)


# --- rpc_body ---------------------------------------------------------------------------------


def test_a_request_body_is_one_json_rpc_call_with_id_1() -> None:
    assert json.loads(rpc_body("tools/list")) == {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def test_params_are_included_when_given() -> None:
    params = {"name": "load_session", "arguments": {"repo": "github.com/acme/shop"}}
    assert json.loads(rpc_body("tools/call", params)) == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": params,
    }


def test_empty_params_are_still_sent_but_none_means_no_params() -> None:
    assert json.loads(rpc_body("ping", {}))["params"] == {}
    assert "params" not in json.loads(rpc_body("ping", None))


def test_the_body_is_utf8_json_bytes() -> None:
    body = rpc_body("tools/call", {"arguments": {"summary": "café"}})
    assert isinstance(body, bytes)
    assert json.loads(body.decode("utf-8"))["params"]["arguments"]["summary"] == "café"


# --- tool_result: success ---------------------------------------------------------------------


def test_a_json_reply_gives_its_structured_content() -> None:
    assert tool_result(as_json(message(result=result()))) == STRUCTURED


def test_an_sse_reply_gives_the_structured_content_of_its_last_data_line() -> None:
    first = message(method="notifications/progress", params={"progress": 1})
    reply = as_sse(first, message(result=result({"found": False})), message(result=result()))
    assert tool_result(reply) == STRUCTURED


def test_an_sse_reply_with_a_charset_is_still_read_as_a_stream() -> None:
    reply = as_sse(message(result=result()), content_type="text/event-stream; charset=utf-8")
    assert tool_result(reply) == STRUCTURED


def test_sse_data_lines_are_read_with_or_without_a_space_after_the_colon() -> None:
    reply = Reply(200, b"data:" + message(result=result()) + b"\r\n\r\n", "text/event-stream")
    assert tool_result(reply) == STRUCTURED


def test_without_structured_content_the_first_text_content_is_parsed() -> None:
    plain = result()
    del plain["structuredContent"]
    assert tool_result(as_json(message(result=plain))) == STRUCTURED


@pytest.mark.parametrize("structured", [None, [1, 2], "text"])
def test_structured_content_that_is_not_an_object_falls_back_to_the_text(structured: Any) -> None:
    reply = as_json(message(result={**result(), "structuredContent": structured}))
    assert tool_result(reply) == STRUCTURED


def test_non_utf8_bytes_in_a_reply_do_not_stop_it_being_read() -> None:
    body = message(result=result()).replace(b'"auth-jwt"', b'"auth-\xff"')
    assert tool_result(as_json(body))["name"] == "auth-\ufffd"


# --- tool_result: errors ----------------------------------------------------------------------


def test_a_json_rpc_error_raises_tool_call_failed_with_its_message() -> None:
    reply = as_json(message(error={"code": -32602, "message": "Unknown tool: drop_tables"}))
    assert failure(reply) == "Unknown tool: drop_tables"


def test_a_json_rpc_error_without_a_message_still_raises() -> None:
    assert failure(as_json(message(error={"code": -32603}))) == "error"


def test_a_json_rpc_error_in_the_last_sse_event_raises() -> None:
    reply = as_sse(message(error={"code": -32603, "message": "boom"}))
    assert failure(reply) == "boom"


def test_a_tool_error_raises_tool_call_failed_with_its_text() -> None:
    failed = {"content": [{"type": "text", "text": "invalid arguments: name: too long"}], "isError": True}
    assert failure(as_json(message(result=failed))) == "invalid arguments: name: too long"


@pytest.mark.parametrize("content", [None, [], [{}]])
def test_a_tool_error_without_text_still_raises(content: Any) -> None:
    assert failure(as_json(message(result={"content": content, "isError": True}))) == "tool error"


def test_a_tool_error_wins_over_any_structured_content() -> None:
    failed = {**result(), "isError": True, "content": [{"type": "text", "text": "rate limited"}]}
    assert failure(as_json(message(result=failed))) == "rate limited"


# --- tool_result: malformed replies (callers treat ValueError / LookupError as "malformed") ----


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, b"not json", "application/json"),
        Reply(200, b"", "application/json"),
        Reply(200, b"event: message\n\n", "text/event-stream"),
    ],
    ids=["not-json", "empty", "sse-without-data"],
)
def test_a_reply_that_is_not_json_raises_value_error(reply: Reply) -> None:
    with pytest.raises(ValueError):
        tool_result(reply)


def test_a_reply_with_neither_result_nor_error_raises_lookup_error() -> None:
    with pytest.raises(LookupError):
        tool_result(as_json(message()))


def test_a_text_fallback_that_is_not_json_raises_value_error() -> None:
    plain = {"content": [{"type": "text", "text": "found it!"}], "isError": False}
    with pytest.raises(ValueError):
        tool_result(as_json(message(result=plain)))


@pytest.mark.parametrize(
    "url", ["http://example.com/mcp", "http://10.0.0.5:8765/mcp", "http://sessionvault.internal/mcp"]
)
def test_the_key_never_goes_over_plain_http_to_another_host(url: str) -> None:
    with pytest.raises(ConfigError, match="plain http"):
        require_safe_url(url)


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8765/mcp", "http://localhost/mcp", "http://[::1]:9/mcp", "https://x.example/mcp"],
)
def test_https_anywhere_and_http_on_this_machine_are_fine(url: str) -> None:
    assert require_safe_url(url)
