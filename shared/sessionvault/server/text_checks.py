"""Text the database cannot hold, found before any handler sees it: a NUL (Postgres text has no
room for one) or a lone surrogate (no UTF-8 encoding exists for one, so psycopg refuses it) in
a path, a query string, a form or a JSON body. Deep in a handler either became a 500 before
authentication (/authorize, /token, /revoke, /register, the API's query strings); refused at
the edge it is a 400 that says what and where. A percent-escaped query string or urlencoded form
must also be UTF-8 once unescaped: a lone surrogate there is the bytes ED A0 80 .. ED BF BF,
which UTF-8 does not allow, and other bytes that are not UTF-8 became U+FFFD silently."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.types import Scope

_UNHOLDABLE = re.compile("[\\x00\\ud800-\\udfff]")
NUL_OR_SURROGATE = "a NUL (U+0000) or a lone surrogate (U+D800-U+DFFF)"


def text_problem(text: str) -> str | None:
    """What in `text` the database cannot hold, or None."""
    found = _UNHOLDABLE.search(text)
    if found is None:
        return None
    return "a NUL (U+0000)" if found.group() == "\x00" else "a lone surrogate (U+D800-U+DFFF)"


def encoded_problem(raw: bytes) -> str | None:
    """For a query string or a urlencoded form as sent: a NUL, or bytes that are not UTF-8 once
    the percent escapes are undone; else None."""
    decoded = unquote_to_bytes(raw.replace(b"+", b" "))
    if b"\x00" in decoded:
        return "a NUL (U+0000)"
    try:
        decoded.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes that are not UTF-8 (a lone surrogate among them)"
    return None


def json_problem(value: Any) -> tuple[str, str] | None:
    """(what, where) for the first key or string of a parsed JSON value that holds a NUL or a
    lone surrogate, `where` a path such as `params.arguments.plan[2]` (the caller's own keys,
    any bad character in them masked, cut to 200 characters); else None. Walked without
    recursion: the parser admits nesting deeper than the stack."""
    todo: list[tuple[str, Any]] = [("the body", value)]
    while todo:
        where, item = todo.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return problem, where
        elif isinstance(item, dict):
            for key, child in item.items():
                label = _UNHOLDABLE.sub("?", key if where == "the body" else f"{where}.{key}")[:200]
                problem = text_problem(key)
                if problem:
                    return problem, f"a key of {where}"
                todo.append((label, child))
        elif isinstance(item, list):
            todo.extend((f"{where}[{i}]", child) for i, child in enumerate(item))
    return None


def request_problem(scope: Scope) -> str | None:
    """What the request's path or query string holds that the database cannot, or None."""
    problem = text_problem(scope.get("path", ""))
    if problem:
        return f"{problem} in the path"
    problem = encoded_problem(scope.get("query_string", b""))
    return f"{problem} in the query string" if problem else None
