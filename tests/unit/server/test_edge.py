"""The HTTP edge of /mcp: reading a capped JSON body, naming the method, classing the SDK's own
errors and picking the request id. Pure functions of the ASGI request: no server, no database."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from sessionvault.errors import Refused
from sessionvault.server.edge import (
    PROTOCOL_METHODS,
    answered_with_error,
    method_of,
    read_json,
    request_id,
)

LIMIT = 1000
TOOLS = frozenset({"save_session", "load_session", "search_sessions"})


class FakeReceive:
    """An ASGI `receive` that hands out the given messages and counts how many were taken."""

    def __init__(self, messages: Iterable[dict[str, Any]]) -> None:
        self.messages = list(messages)
        self.taken = 0

    async def __call__(self) -> dict[str, Any]:
        if self.taken == len(self.messages):
            raise AssertionError("read_json asked for a message after the body had ended")
        self.taken += 1
        return self.messages[self.taken - 1]


def chunks(*parts: bytes) -> FakeReceive:
    """The body in several http.request messages, the last one without more_body."""
    return FakeReceive(
        {"type": "http.request", "body": part, "more_body": i < len(parts) - 1}
        for i, part in enumerate(parts)
    )


def length(body: bytes) -> dict[str, str]:
    return {"content-length": str(len(body))}


def rpc_error(refusal: Refused) -> dict[str, Any]:
    """The JSON-RPC error a refusal answers with (id is null: the request was never read)."""
    message = json.loads(refusal.body)
    assert message["jsonrpc"] == "2.0" and message["id"] is None
    return message["error"]


async def refusal_of(receive: FakeReceive, headers: dict[str, str], limit: int = LIMIT) -> Refused:
    with pytest.raises(Refused) as caught:
        await read_json(receive, headers, limit)
    return caught.value


# --- read_json: a good body -------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_json_body_is_returned_raw_and_parsed() -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    assert await read_json(chunks(body), length(body), LIMIT) == (body, json.loads(body))


@pytest.mark.anyio
async def test_a_body_in_several_messages_is_joined_in_order() -> None:
    receive = chunks(b'{"jsonrpc": ', b'"2.0", "id": 7, ', b'"method": "tools/list"}')
    raw, payload = await read_json(receive, {}, LIMIT)
    assert raw == b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}'
    assert payload == {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    assert receive.taken == 3


@pytest.mark.anyio
async def test_a_message_without_a_body_key_counts_as_empty() -> None:
    receive = FakeReceive(
        [{"type": "http.request", "more_body": True}, {"type": "http.request", "body": b"[]"}]
    )
    assert await read_json(receive, {}, LIMIT) == (b"[]", [])


@pytest.mark.anyio
async def test_a_body_of_exactly_the_cap_is_accepted() -> None:
    body = b'"' + b"x" * (LIMIT - 2) + b'"'
    assert len(body) == LIMIT
    raw, payload = await read_json(chunks(body), length(body), LIMIT)
    assert raw == body and payload == "x" * (LIMIT - 2)


# --- read_json: the size cap ------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_body_over_the_cap_is_refused_with_413_before_it_is_all_read() -> None:
    receive = chunks(b"[" + b"1," * 400, b"1," * 400, b"1]")
    refusal = await refusal_of(receive, {})
    assert (refusal.status, refusal.error_class) == (413, "validation")
    assert rpc_error(refusal) == {"code": -32600, "message": f"request body exceeds {LIMIT} bytes"}
    assert receive.taken == 2  # the third message is never asked for


@pytest.mark.anyio
async def test_a_declared_length_over_the_cap_is_refused_with_413_without_reading_anything() -> None:
    receive = chunks(b"{}")
    refusal = await refusal_of(receive, {"content-length": str(LIMIT + 1)})
    assert (refusal.status, refusal.error_class) == (413, "validation")
    assert rpc_error(refusal)["code"] == -32600
    assert receive.taken == 0


@pytest.mark.anyio
async def test_a_body_longer_than_its_declared_length_is_still_capped_while_streaming() -> None:
    receive = chunks(b"x" * 600, b"x" * 600)
    refusal = await refusal_of(receive, {"content-length": "2"})
    assert refusal.status == 413


@pytest.mark.anyio
@pytest.mark.parametrize("declared", ["abc", "-1", "1.5", " 12", "12 ", "0x10", "1e3"])
async def test_a_content_length_that_is_not_a_plain_number_is_refused_with_400(declared: str) -> None:
    receive = chunks(b"{}")
    refusal = await refusal_of(receive, {"content-length": declared})
    assert (refusal.status, refusal.error_class) == (400, "validation")
    assert rpc_error(refusal) == {"code": -32600, "message": "invalid Content-Length"}
    assert receive.taken == 0


@pytest.mark.anyio
@pytest.mark.parametrize("declared", ["²", "1³"])
async def test_a_content_length_in_superscript_digits_is_refused_with_400(declared: str) -> None:
    # Header bytes are decoded as latin-1, so a raw b"\xb2" arrives as "²".
    assert declared.isdigit()
    refusal = await refusal_of(chunks(b"{}"), {"content-length": declared})
    assert (refusal.status, rpc_error(refusal)["message"]) == (400, "invalid Content-Length")


@pytest.mark.anyio
async def test_an_absurdly_long_content_length_is_refused_not_crashed_on() -> None:
    with pytest.raises(Refused) as caught:
        await read_json(chunks(b"{}"), {"content-length": "9" * 5000}, LIMIT)
    assert caught.value.status in (400, 413)


# --- read_json: bodies that are not JSON ------------------------------------------------------


async def assert_parse_error(body: bytes, limit: int = LIMIT) -> None:
    refusal = await refusal_of(chunks(body), length(body), limit)
    assert (refusal.status, refusal.error_class) == (400, "validation")
    assert rpc_error(refusal) == {"code": -32700, "message": "parse error: body is not valid JSON"}


@pytest.mark.anyio
@pytest.mark.parametrize("body", [b"{ broken", b"", b"{}{}", b"nul", b"{'single': 'quotes'}"])
async def test_a_body_that_is_not_json_is_refused_with_a_parse_error(body: bytes) -> None:
    await assert_parse_error(body)


@pytest.mark.anyio
@pytest.mark.parametrize("body", [b'"\xff\xfe"', b'{"name": "caf\xe9"}'])
async def test_a_body_that_is_not_utf8_is_refused_with_a_parse_error(body: bytes) -> None:
    await assert_parse_error(body)


@pytest.mark.anyio
async def test_a_parse_error_does_not_echo_the_body() -> None:
    body = b'{"summary": "secret-token-123"'
    refusal = await refusal_of(chunks(body), length(body))
    assert b"secret-token-123" not in refusal.body


@pytest.mark.anyio
async def test_deeply_nested_json_is_refused_with_a_parse_error() -> None:
    await assert_parse_error(b"[" * 100_000, limit=200_000)


@pytest.mark.anyio
async def test_an_integer_too_long_to_convert_is_refused_with_a_parse_error() -> None:
    await assert_parse_error(b"1" * 5000, limit=10_000)


# --- read_json: the client going away --------------------------------------------------------


@pytest.mark.anyio
async def test_a_disconnect_mid_body_stops_reading_and_the_partial_body_is_a_parse_error() -> None:
    receive = FakeReceive(
        [
            {"type": "http.request", "body": b'{"jsonrpc": "2.0", ', "more_body": True},
            {"type": "http.disconnect"},
        ]
    )
    refusal = await refusal_of(receive, {"content-length": "60"})
    assert (refusal.status, rpc_error(refusal)["code"]) == (400, -32700)
    assert receive.taken == 2


@pytest.mark.anyio
async def test_a_disconnect_before_any_body_is_a_parse_error() -> None:
    receive = FakeReceive([{"type": "http.disconnect"}])
    refusal = await refusal_of(receive, {})
    assert (refusal.status, rpc_error(refusal)["code"]) == (400, -32700)


# --- method_of --------------------------------------------------------------------------------


def call(name: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}}}


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_a_call_to_a_known_tool_is_named_by_the_tool(tool: str) -> None:
    assert method_of(call(tool), TOOLS) == tool


@pytest.mark.parametrize(
    "name", ["drop_tables", "", "Save_Session", "tools/call", None, 42, ["save_session"]]
)
def test_a_call_to_anything_but_a_known_tool_is_other(name: Any) -> None:
    assert method_of(call(name), TOOLS) == "other"


@pytest.mark.parametrize("params", [None, "save_session", ["save_session"], 1])
def test_a_call_whose_params_are_not_an_object_is_other(params: Any) -> None:
    assert method_of({"jsonrpc": "2.0", "method": "tools/call", "params": params}, TOOLS) == "other"


def test_a_call_without_params_is_other() -> None:
    assert method_of({"jsonrpc": "2.0", "method": "tools/call"}, TOOLS) == "other"


@pytest.mark.parametrize("method", sorted(PROTOCOL_METHODS - {"tools/call"}))
def test_a_known_protocol_method_is_named_as_sent(method: str) -> None:
    assert method_of({"jsonrpc": "2.0", "id": 1, "method": method}, TOOLS) == method


@pytest.mark.parametrize("method", ["resources/subscribe", "PING", "save_session", "x" * 10_000, ""])
def test_an_unknown_method_is_other_never_the_callers_text(method: str) -> None:
    assert method_of({"jsonrpc": "2.0", "id": 1, "method": method}, TOOLS) == "other"


@pytest.mark.parametrize("method", [None, 1, ["ping"], {"ping": 1}])
def test_a_method_that_is_not_a_string_is_other(method: Any) -> None:
    assert method_of({"jsonrpc": "2.0", "id": 1, "method": method}, TOOLS) == "other"


def test_a_message_without_a_method_is_other() -> None:
    assert method_of({"jsonrpc": "2.0", "id": 1, "result": {}}, TOOLS) == "other"


@pytest.mark.parametrize("payload", [[], [call("save_session"), {"method": "ping"}]])
def test_a_batch_is_named_batch(payload: list[Any]) -> None:
    assert method_of(payload, TOOLS) == "batch"


@pytest.mark.parametrize("payload", [None, "ping", 1, 1.5, True])
def test_a_payload_that_is_neither_object_nor_list_is_other(payload: Any) -> None:
    assert method_of(payload, TOOLS) == "other"


def test_the_set_of_tools_decides_what_a_call_is_named() -> None:
    assert method_of(call("save_session"), ()) == "other"
    assert method_of(call("save_session"), ["save_session"]) == "save_session"


# --- answered_with_error ----------------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 599])
def test_a_5xx_answer_is_an_internal_error(status: int) -> None:
    assert answered_with_error(status, b"") == "internal"


@pytest.mark.parametrize("status", [400, 404, 405, 406, 415, 429, 499])
def test_a_4xx_answer_is_a_validation_error(status: int) -> None:
    assert answered_with_error(status, b'{"result": {}}') == "validation"


def test_a_200_carrying_a_json_rpc_error_is_a_validation_error() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}})
    assert answered_with_error(200, body.encode()) == "validation"


def test_a_successful_200_is_no_error() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": False}})
    assert answered_with_error(200, body.encode()) is None


def test_a_result_that_merely_contains_an_error_key_is_no_error() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {"error": "none"}}})
    assert b'"error"' in body.encode()
    assert answered_with_error(200, body.encode()) is None


@pytest.mark.parametrize("body", [b'not json "error"', b'"error"\xff{', b'[{"error": 1}]', b""])
def test_a_200_body_that_is_not_a_json_object_is_no_error(body: bytes) -> None:
    assert answered_with_error(200, body) is None


@pytest.mark.parametrize("status", [202, 204, 301])
def test_other_non_error_statuses_with_empty_bodies_are_no_error(status: int) -> None:
    assert answered_with_error(status, b"") is None


# --- request_id -------------------------------------------------------------------------------


def scope(headers: list[tuple[bytes, bytes]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "http", "headers": headers or [], **extra}


def test_the_api_gateway_request_id_wins_over_the_header() -> None:
    event = {"requestContext": {"requestId": "gw-123"}}
    assert request_id(scope(**{"aws.event": event}), {"x-request-id": "hdr-456"}) == "gw-123"


def test_without_a_gateway_id_the_x_request_id_header_is_used() -> None:
    assert request_id(scope(), {"x-request-id": "hdr-456"}) == "hdr-456"
    assert request_id(scope(**{"aws.event": {}}), {"x-request-id": "hdr-456"}) == "hdr-456"
    no_id = {"requestContext": {"requestId": ""}}
    assert request_id(scope(**{"aws.event": no_id}), {"x-request-id": "hdr-456"}) == "hdr-456"


def test_without_either_a_fresh_random_id_is_made() -> None:
    first, second = request_id(scope(), {}), request_id(scope(), {})
    assert first != second
    assert len(first) == 32 and int(first, 16) >= 0


def test_the_api_gateway_request_id_is_truncated_to_100_characters() -> None:
    """API Gateway's own id (HTTP APIs end theirs in "="), not the caller's: kept as it is."""
    long_id = "a" * 99 + "bcdef"
    found = request_id(scope(**{"aws.event": {"requestContext": {"requestId": long_id}}}), {})
    assert found == long_id[:100] and len(found) == 100
    assert request_id(scope(**{"aws.event": {"requestContext": {"requestId": "JKJaXmPLvHcESHA="}}}), {}) == (
        "JKJaXmPLvHcESHA="
    )


@pytest.mark.parametrize(
    "sent", ["a", "fz-http-0a1b2c3d-17", "A.b_c-9", "x" * 64, "0123456789abcdef0123456789abcdef"]
)
def test_a_callers_request_id_of_the_allowed_shape_is_kept(sent: str) -> None:
    assert request_id(scope(), {"x-request-id": sent}) == sent


@pytest.mark.parametrize(
    "sent",
    [
        "x" * 65,  # too long
        "",
        "a b",
        "id\nforged log line",
        '"},{"level":"ERROR"',
        "<script>",
        "caf\u00e9",
        "../../etc",  # slashes are not in the shape
        "a;b",
        "\x00",
        "sv_live_abc def",
    ],
)
def test_any_other_request_id_from_the_caller_is_replaced_by_a_fresh_one(sent: str) -> None:
    found = request_id(scope(), {"x-request-id": sent})
    assert found != sent and len(found) == 32 and int(found, 16) >= 0


@pytest.mark.parametrize("event", [{"requestContext": None}, {"requestContext": {"requestId": 7}}, []])
def test_an_odd_event_never_fails_the_request_id(event: Any) -> None:
    assert request_id(scope(**{"aws.event": event}), {"x-request-id": "ok-1"}) == "ok-1"
