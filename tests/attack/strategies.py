"""Hypothesis strategies for the attack tier: tool arguments derived from each tool's own input
schema (so a new tool or field is fuzzed without touching this file), at and across every
bound, mixed with values of the wrong type; and arbitrary JSON."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from hypothesis import strategies as st

from .support import PROTOCOL_VERSION

# No lone surrogates: they cannot be encoded as UTF-8 JSON text. (A JSON escape of one still
# gets sent, by the raw-body fuzzer.)
CHARS = st.characters(exclude_categories=("Cs",))
NUL = "\x00"
MODERN = "2026-07-28"
LEGACY_VERSIONS = ("2025-06-18", "2025-11-25", "2025-03-26", "2024-11-05")

# Scalars that break naive code: huge and negative integers, floats that are whole numbers
# (strict models must refuse them), numeric and boolean strings.
HUGE_INTS = st.sampled_from(
    [2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63, -(2**63) - 1, 10**30, -(10**30)]
)
ODD_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    HUGE_INTS,
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, 1.0, -1.0, 1e308, 5e-324]),
    st.sampled_from(["", " ", "0", "1", "-1", "true", "null", "NaN", "1e9", "brief ", "BRIEF"]),
    st.text(CHARS, max_size=12),
)
JSON = st.recursive(
    ODD_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(CHARS, max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)


def _repeat(seed: str, length: int) -> str:
    return (seed * (length // len(seed) + 1))[:length] if length > 0 else ""


def _with_nul(text: str, at: int) -> str:
    at %= len(text)
    return text[:at] + NUL + text[at + 1 :]


SEED = st.text(CHARS, min_size=1, max_size=4)


def sized(lengths: st.SearchStrategy[int], *, nul: bool = False) -> st.SearchStrategy[str]:
    """Strings of the drawn length (in code points), cheaply: a short random run, repeated."""
    made = st.tuples(SEED, lengths).map(lambda t: _repeat(*t))
    if nul:
        return st.tuples(made.filter(bool), st.integers(0, 10**6)).map(lambda t: _with_nul(*t))
    return made


def strings(schema: dict[str, Any], *, valid: bool) -> st.SearchStrategy[str]:
    low, high = schema.get("minLength", 0), schema.get("maxLength", 10_000)
    if valid:
        bounds = sorted({low, min(low + 1, high), high, max(high - 1, low)})
        short = st.text(CHARS, min_size=low, max_size=min(high, 40))
        return st.one_of(short, short, short, sized(st.sampled_from(bounds)))
    options = [sized(st.integers(high + 1, high + 50))]
    if low > 0:
        options.append(st.just(_repeat("x", low - 1)))
    options.append(sized(st.integers(max(low, 1), min(high, 50)), nul=True))
    return st.one_of(options)


def integers(schema: dict[str, Any], *, valid: bool) -> st.SearchStrategy[Any]:
    low, high = schema.get("minimum"), schema.get("maximum")
    if valid:
        edge = [v for v in (low, high) if v is not None]
        return st.one_of(st.integers(low, high), st.sampled_from(edge) if edge else st.integers())
    wrong: list[st.SearchStrategy[Any]] = [HUGE_INTS, st.sampled_from([True, False, 1.0, 1.5, "1"])]
    if low is not None:
        wrong.append(st.integers(max_value=low - 1))
    if high is not None:
        wrong.append(st.integers(min_value=high + 1))
    return st.one_of(wrong)


def values(schema: dict[str, Any], *, valid: bool = True) -> st.SearchStrategy[Any]:
    """A value that `schema` accepts (valid) or one that is just across a bound of it."""
    if "enum" in schema:
        if valid:
            return st.sampled_from(schema["enum"])
        return st.one_of(
            st.sampled_from([v.upper() for v in schema["enum"]] + [v + " " for v in schema["enum"]]),
            st.text(CHARS, max_size=8).filter(lambda v: v not in schema["enum"]),
        )
    kind = schema.get("type")
    if kind == "string":
        return strings(schema, valid=valid)
    if kind == "integer":
        return integers(schema, valid=valid)
    if kind == "array":
        items, most = schema.get("items", {}), schema.get("maxItems", 50)
        filler = (
            st.just({"decision": "d", "reason": "r"})
            if items.get("type") == "object"
            else st.text(CHARS, max_size=3)
        )
        if valid:
            # up to a few items, or exactly at the cap (each item small: well inside the body limit)
            few = st.lists(values(items), max_size=min(most, 4))
            return st.one_of(few, few, few, few, filler.map(lambda x: [x] * most))
        return st.one_of(
            st.lists(values(items, valid=False), min_size=1, max_size=3),
            filler.map(lambda x: [x] * (most + 1)),
            st.lists(ODD_SCALARS.filter(lambda v: not isinstance(v, str)), min_size=1, max_size=3),
        )
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        if valid:
            return st.fixed_dictionaries(
                {k: values(v) for k, v in properties.items() if k in required},
                optional={k: values(v) for k, v in properties.items() if k not in required},
            )
        return st.one_of(
            st.fixed_dictionaries({k: values(v, valid=False) for k, v in properties.items()}),
            st.just({k: "x" for k in properties if k not in required}),  # a required key missing
            st.dictionaries(st.text(CHARS, min_size=1, max_size=8), JSON, min_size=1, max_size=2),
        )
    return JSON


NAME_POOL = st.sampled_from(
    [
        "plan",
        "Plan",
        "plan ",
        " plan",
        "\u03b1/\u03b2",
        "a" * 200,
        "'; DROP TABLE sessions; --",
        "%",
        "_",
        "\\",
        "🙂",
        "null",
    ]
)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


# list_sessions cursors and delete_all_sessions tokens as a forger would make them: the right
# shape (base64 of "timestamp|uuid", 40 bytes of base64) with odd contents.
STAMPS = st.one_of(
    st.datetimes(timezones=st.just(UTC)).map(datetime.isoformat),
    st.datetimes().map(datetime.isoformat),  # naive
    st.sampled_from(
        [
            "2024-01-01",
            "0001-01-01T00:00:00-23:59",
            "9999-12-31T23:59:59+23:59",
            "2024-13-01T00:00:00",
            "2024-01-01T00:00:00.123456789",
            "",
            "nan",
            "2024-01-01T24:00:00+00:00",
        ]
    ),
)
UUIDISH = st.one_of(
    st.uuids().map(str),
    st.sampled_from(
        [
            "",
            "x",
            "00000000-0000-0000-0000-000000000000",
            "{12345678-1234-5678-1234-567812345678}",
            "urn:uuid:12345678-1234-5678-1234-567812345678",
            "a|b",
        ]
    ),
)
FORGED_CURSORS = st.tuples(STAMPS, UUIDISH).map(lambda t: _b64(f"{t[0]}|{t[1]}".encode()))
FORGED_TOKENS = st.one_of(
    st.binary(min_size=40, max_size=40).map(_b64),
    st.binary(min_size=40, max_size=40).map(lambda b: _b64(b).rstrip("=")),
    st.binary(max_size=60).map(_b64),
)
SPECIAL: dict[str, st.SearchStrategy[Any]] = {
    "name": NAME_POOL,
    "cursor": FORGED_CURSORS,
    "confirm_token": FORGED_TOKENS,
    "confirm_phrase": st.just("I CONFIRM DELETE ALL"),
}


def arguments(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A tool's arguments: per field valid (most often), just invalid, of a wrong type, or
    missing; now and then an unknown extra field, or arguments that are no object at all."""
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))

    def field(key: str, spec: dict[str, Any]) -> st.SearchStrategy[Any]:
        good = values(spec)
        if key in SPECIAL:
            good = st.one_of(SPECIAL[key], good)
        return st.one_of(good, good, good, good, good, good, values(spec, valid=False), JSON)

    shaped = st.fixed_dictionaries(
        {k: field(k, v) for k, v in properties.items() if k in required},
        optional={k: field(k, v) for k, v in properties.items() if k not in required},
    )
    missing = st.fixed_dictionaries({}, optional={k: field(k, v) for k, v in properties.items()})
    extra = st.tuples(shaped, st.text(CHARS, min_size=1, max_size=10), JSON).map(
        lambda t: {**t[0], t[1]: t[2]} if t[1] not in properties else t[0]
    )
    valid = values(schema)
    return st.one_of(valid, valid, valid, shaped, shaped, shaped, missing, extra, JSON)


def envelope(
    method: str, params: Any, *, modern: bool, id_: Any = 1
) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """A JSON-RPC request body and the MCP headers that go with it, legacy or 2026-07-28."""
    extra: list[tuple[bytes, bytes]] = []
    if modern:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        params = {**params, "_meta": meta} if isinstance(params, dict) else params
        extra.append((b"mcp-method", method.encode()))
        if isinstance(params, dict) and isinstance(params.get("name"), str):
            extra.append((b"mcp-name", params["name"].encode("utf-8", "replace")))
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    version = MODERN if modern else PROTOCOL_VERSION
    return json.dumps(message).encode(), [(b"mcp-protocol-version", version.encode()), *extra]


# ---------------------------------------------------------------------------------------------
# Form bodies for the OAuth endpoints and the consent page: urlencoded and multipart, well
# formed and broken (boundaries missing, empty, wrong or huge; parts without a name, files,
# bad headers, no closing line), with many fields and huge field names. Each comes with the
# Content-Type it claims. No https URL anywhere: a client_id that is one would be fetched as
# a client metadata document.

FORM_TYPE = "application/x-www-form-urlencoded"
OAUTH_FIELD_NAMES = [
    "grant_type",
    "code",
    "redirect_uri",
    "code_verifier",
    "client_id",
    "client_secret",
    "refresh_token",
    "token",
    "token_type_hint",
    "resource",
    "scope",
    "state",
    "response_type",
    "code_challenge",
    "code_challenge_method",
    "request",
    "csrf",
    "api_key",
    "decision",
]
FIELD_NAMES = st.one_of(st.sampled_from(OAUTH_FIELD_NAMES), st.text(CHARS, max_size=12))
FIELD_VALUES = st.one_of(
    st.sampled_from(
        [
            "",
            "authorization_code",
            "refresh_token",
            "code",
            "S256",
            "plain",
            "approve",
            "deny",
            "read write",
            "http://127.0.0.1:1/cb",
            "http://127.0.0.1:8000/mcp",
            "sv_live_" + "A" * 32,
            "sv_rt_" + "B" * 43,
            "00000000-0000-0000-0000-000000000000",
            "x" * 300,
            "%",
            "%zz",
            "\x00",
        ]
    ),
    st.text(CHARS, max_size=30),
)
FIELDS = st.lists(st.tuples(FIELD_NAMES, FIELD_VALUES), max_size=8)
BOUNDARY = st.text(st.sampled_from("abcXYZ0189'()+_,-./:=?"), min_size=1, max_size=70)
MANY = st.sampled_from([99, 100, 101, 999, 1_000, 1_001, 5_000])
HUGE = st.sampled_from([1_000, 10_000, 60_000, 70_000])  # 64 KB is the body cap


AUTH_METHODS = ["none", "client_secret_post", "client_secret_basic", "private_key_jwt"]
GRANT_TYPES = ["authorization_code", "refresh_token", "implicit"]


def urlencoded(fields: list[tuple[str, str]]) -> bytes:
    return urlencode(fields).encode("utf-8", "surrogatepass")


def _disposition(name: str, filename: str | None = None) -> str:
    quoted = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"Content-Disposition: form-data; name={quoted}" + (f'; filename="{filename}"' if filename else "")


def multipart(
    fields: list[tuple[str, str]], boundary: str, *, close: bool = True, file: bool = False
) -> bytes:
    lines: list[str] = []
    for i, (name, value) in enumerate(fields):
        lines += [f"--{boundary}", _disposition(name, "f.txt" if file and i == 0 else None), "", value]
    if close:
        lines.append(f"--{boundary}--")
    return "\r\n".join([*lines, ""]).encode("utf-8", "surrogatepass")


def _multipart_type(boundary: str) -> str:
    return f"multipart/form-data; boundary={boundary}"


FORM_BODIES: st.SearchStrategy[tuple[bytes, str]] = st.one_of(
    # well formed
    FIELDS.map(lambda f: (urlencoded(f), FORM_TYPE)),
    FIELDS.map(lambda f: (urlencoded(f), FORM_TYPE + "; charset=utf-8")),
    st.tuples(FIELDS, BOUNDARY).map(lambda t: (multipart(t[0], t[1]), _multipart_type(t[1]))),
    st.tuples(FIELDS, BOUNDARY).map(lambda t: (multipart(t[0], t[1]), _multipart_type(f'"{t[1]}"'))),
    # urlencoded bytes that are not quite a form
    st.binary(max_size=200).map(lambda b: (b, FORM_TYPE)),
    st.sampled_from([b"%zz=%&&==", b"\xff\xfe=\x00", b"a=1&a=2&a=3", b"=", b"&&&", b"a", b"+=+"]).map(
        lambda b: (b, FORM_TYPE)
    ),
    # many fields, huge names and values
    MANY.map(lambda n: (urlencoded([(f"f{i}", "v") for i in range(n)]), FORM_TYPE)),
    MANY.map(lambda n: (multipart([(f"f{i}", "v") for i in range(n)], "b"), _multipart_type("b"))),
    HUGE.map(lambda n: (urlencoded([("n" * n, "v")]), FORM_TYPE)),
    HUGE.map(lambda n: (urlencoded([("client_id", "v" * n)]), FORM_TYPE)),
    HUGE.map(lambda n: (multipart([("n" * n, "v")], "b"), _multipart_type("b"))),
    HUGE.map(lambda n: (multipart([("state", "v" * n)], "b"), _multipart_type("b"))),
    # broken multipart: no, empty, wrong or huge boundary; bad parts; no end
    FIELDS.map(lambda f: (multipart(f, "b"), "multipart/form-data")),
    FIELDS.map(lambda f: (multipart(f, "b"), "multipart/form-data; boundary=")),
    FIELDS.map(lambda f: (multipart(f, "b"), "multipart/form-data; boundary=other")),
    FIELDS.map(lambda f: (multipart(f, "b"), "multipart/form-data; charset=utf-8")),
    FIELDS.map(lambda f: (multipart(f, "b" * 5_000), _multipart_type("b" * 5_000))),
    FIELDS.map(lambda f: (multipart(f, "b", close=False), _multipart_type("b"))),
    FIELDS.map(lambda f: (multipart(f, "b", file=True), _multipart_type("b"))),
    st.sampled_from(
        [
            b"--b\r\nContent-Disposition: form-data\r\n\r\nv\r\n--b--\r\n",  # no name
            b"--b\r\nno colon here\r\n\r\nv\r\n--b--\r\n",
            b"--b\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--b--\r\n--b--\r\n",
            b"--b\r\n\r\n\r\n--b--\r\n",
            b"--b--\r\n",
            b"--b",
            b"garbage",
            b"",
            b"\x00",
            b"--b\r\nContent-Type: multipart/mixed; boundary=c\r\n"
            b"Content-Disposition: form-data; name=a\r\n\r\n--c\r\n\r\nx\r\n--c--\r\n--b--\r\n",
            b"--b\r\nContent-Disposition: form-data; name=a\r\nContent-Transfer-Encoding: base64\r\n\r\n"
            b"!!!\r\n--b--\r\n",
            b"--b\r\nContent-Disposition: form-data; name*=UTF-8''%ff\r\n\r\nv\r\n--b--\r\n",
            b"--b\r\nContent-Disposition: form-data; name=\xff\xfe\r\n\r\n\xff\r\n--b--\r\n",
        ]
    ).map(lambda b: (b, _multipart_type("b"))),
    st.binary(max_size=300).map(lambda b: (b, _multipart_type("b"))),
    # JSON, for /register (never a registration that could be stored: no redirect URI this
    # server accepts), and elsewhere as the wrong kind of body
    st.fixed_dictionaries(
        {},
        optional={
            "redirect_uris": st.lists(
                st.sampled_from(["http://example.com/cb", "javascript:alert(1)", "", "ftp://x", "x"]),
                max_size=7,
            )
            | JSON,
            "client_name": st.text(CHARS, max_size=120) | JSON,
            "token_endpoint_auth_method": st.sampled_from(AUTH_METHODS) | JSON,
            "grant_types": st.lists(st.sampled_from(GRANT_TYPES)) | JSON,
            "scope": st.sampled_from(["read", "read write delete", "admin", ""]) | JSON,
        },
    ).map(lambda d: (json.dumps(d).encode(), "application/json")),
)
