"""JSON with comments and trailing commas (Zed, VS Code and OpenCode read it), edited in place.

Rather than re-serialize (which drops comments and reformats a user's file), `put` splices one
entry into the original text; the caller re-parses the result with `load` to prove it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sessionvault.errors import ConfigFileError

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
      |(?P<comment>//[^\n]*|/\*.*?\*/)
      |(?P<tok>"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"/]+)""",
    re.S | re.X,
)


@dataclass(frozen=True)
class _Tok:
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class _Member:
    key: str
    key_at: int  # token indexes
    value_at: int
    value_end: int  # one past the value's last token


def _tokens(text: str) -> list[_Tok]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ConfigFileError(f"not JSON: unexpected {text[pos : pos + 20]!r}")
        if m["tok"]:
            out.append(_Tok(m["tok"], m.start(), m.end()))
        pos = m.end()
    return out


def load(text: str) -> dict[str, Any]:
    toks = _tokens(text)
    if not toks:
        return {}
    # Drop trailing commas; comments are already gone.
    kept = [t.text for i, t in enumerate(toks) if not (t.text == "," and _next_closes(toks, i))]
    try:
        data = json.loads(" ".join(kept))
    except ValueError as exc:
        raise ConfigFileError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigFileError("the file is not a JSON object")
    return data


def _next_closes(toks: list[_Tok], i: int) -> bool:
    return i + 1 < len(toks) and toks[i + 1].text in "}]"


def _value_end(toks: list[_Tok], i: int) -> int:
    if toks[i].text not in "{[":
        return i + 1
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text in "{[":
            depth += 1
        elif toks[j].text in "}]":
            depth -= 1
            if depth == 0:
                return j + 1
    raise ConfigFileError("unbalanced JSON")


def _members(toks: list[_Tok], open_at: int) -> tuple[list[_Member], int]:
    """Members of the object opening at token `open_at`, and the index of its `}`.

    Only called on text that _json_load accepted, so the structure is known to be valid.
    """
    members, j = [], open_at + 1
    while toks[j].text != "}":
        end = _value_end(toks, j + 2)
        members.append(_Member(json.loads(toks[j].text), j, j + 2, end))
        j = end + 1 if toks[end].text == "," else end
    return members, j


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    return re.match(r"[ \t]*", text[start:pos]).group()  # type: ignore[union-attr]  # always matches


def put(text: str, container: str, entry: Any, name: str) -> str:
    toks = _tokens(text)
    if not toks:
        return json.dumps({container: {name: entry}}, indent=2) + "\n"
    root, _ = _members(toks, 0)
    unit = _line_indent(text, toks[root[0].key_at].start) if root else ""
    unit = unit or "  "  # indent unit of the file, taken from its first member
    compact = "\n" not in text.strip()  # a one-line file stays on one line

    def dump(value: Any, indent: str) -> str:
        if compact:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)

    def member(key: str, value: Any, indent: str) -> str:
        lead = " " if compact else "\n" + indent
        return f"{lead}{json.dumps(key)}: {dump(value, indent)}"

    def member_indent(m: _Member, open_at: int) -> str:
        at = toks[m.key_at].start
        before = text[text.rfind("\n", 0, at) + 1 : at]
        # A key alone at the start of its line sets the indent; otherwise nest one unit.
        return before if not before.strip() else _line_indent(text, toks[open_at].start) + unit

    def insert(open_at: int, key: str, value: Any) -> str:
        members, close_at = _members(toks, open_at)
        if not members:
            outer = _line_indent(text, toks[open_at].start)
            new = member(key, value, outer + unit)
            left, right = toks[open_at].end, toks[close_at].start
            if text[left:right].strip():  # keep comments inside an otherwise empty object
                return text[:left] + new + text[left:]
            return text[:left] + new + (" " if compact else "\n" + outer) + text[right:]
        last = members[-1]
        anchor = toks[last.value_end - 1].end
        comma = ","
        if toks[last.value_end].text == ",":  # JSONC trailing comma already there
            anchor, comma = toks[last.value_end].end, ""
        # Insert after a `// comment` that ends the line, so it stays with its member.
        eol = text.find("\n", anchor)
        eol = len(text) if eol < 0 else eol
        rest = text[anchor:eol].strip()
        at = eol if (not rest or rest.startswith("//")) else anchor
        new = member(key, value, member_indent(last, open_at))
        return text[:anchor] + comma + text[anchor:at] + new + text[at:]

    by_key = {m.key: m for m in root}
    if container not in by_key:
        return insert(0, container, {name: entry})
    holder = by_key[container]
    inner, _ = _members(toks, holder.value_at)
    ours = next((m for m in inner if m.key == name), None)
    if ours is None:
        return insert(holder.value_at, name, entry)
    start, end = toks[ours.value_at].start, toks[ours.value_end - 1].end
    return text[:start] + dump(entry, member_indent(ours, holder.value_at)) + text[end:]
