"""What the edge refuses as text the database cannot hold: a NUL or a lone surrogate anywhere in a
path, a query string (percent-escaped, which must also be UTF-8), a form or a JSON value (keys
included), found without recursion, and named by where it is."""

from __future__ import annotations

import json

import pytest

from sessionvault.server.text_checks import encoded_problem, json_problem, request_problem, text_problem


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("plain, and ünïcödé, and 😀", None),
        ("a\x00b", "a NUL (U+0000)"),
        ("a\ud800", "a lone surrogate (U+D800-U+DFFF)"),
        ("\udfff", "a lone surrogate (U+D800-U+DFFF)"),
    ],
)
def test_text_problem(text: str, problem: str | None) -> None:
    assert text_problem(text) == problem


@pytest.mark.parametrize(
    ("raw", "bad"),
    [
        (b"name=plain&repo=github.com%2Facme", False),
        (b"q=%C3%BC+%F0%9F%98%80", False),  # u-umlaut and an emoji, escaped
        (b"name=a%00b", True),
        (b"name=\x00", True),
        (b"name=%ED%A0%80", True),  # U+D800 as UTF-8 would write it: not UTF-8
        (b"name=%FF", True),
        (b"name=%zz", False),  # not an escape at all: left as it is, and harmless
    ],
)
def test_encoded_problem(raw: bytes, bad: bool) -> None:
    assert (encoded_problem(raw) is not None) is bad


def test_json_problem_names_where() -> None:
    value = json.loads('{"params": {"arguments": {"plan": ["ok", "a\\u0000b"]}}}')
    assert json_problem(value) == ("a NUL (U+0000)", "params.arguments.plan[1]")
    assert json_problem(json.loads('{"a\\ud800": 1}')) == (
        "a lone surrogate (U+D800-U+DFFF)",
        "a key of the body",
    )
    assert json_problem(json.loads('["\\udc00"]')) == ("a lone surrogate (U+D800-U+DFFF)", "the body[0]")
    assert json_problem(json.loads('{"fine": ["\\ud83d\\ude00", 1, null, {"x": true}]}')) is None  # a pair


def test_json_problem_walks_nesting_deeper_than_the_stack() -> None:
    value: object = "\x00"
    for _ in range(5000):  # json.loads parses this deep; a recursive walk would overflow
        value = [value]
    assert json_problem(value) is not None


def test_request_problem_reads_the_path_and_the_query() -> None:
    assert request_problem({"path": "/web/session", "query_string": b"name=x"}) is None
    assert request_problem({"path": "/web/a\x00b", "query_string": b""}) == "a NUL (U+0000) in the path"
    problem = request_problem({"path": "/api/v1/session", "query_string": b"name=%ED%A0%80"})
    assert problem is not None and problem.endswith("in the query string")
