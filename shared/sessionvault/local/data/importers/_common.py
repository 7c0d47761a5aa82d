"""What every importer shares: the record's caps and the ways a long text is made to fit.

The caps are core/records.py's (tests/integration/test_importers.py holds them equal); they are
repeated here so that importing an importer does not import pydantic."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MAX_TEXT = 4000  # = records.MAX_TEXT: every string in the record
MAX_ITEMS = 200  # = records.MAX_ITEMS: every list
MAX_NAME = 200  # = records.MAX_NAME
MAX_CLIENT = 300  # = records.MAX_REPO, the cap on `client`

_SLUG = re.compile(r"[^a-z0-9]+")


def clean(text: str) -> str:
    """No NUL (save_session refuses it) and no trailing blanks."""
    return text.replace("\x00", "").rstrip()


def cut(text: str, limit: int = MAX_TEXT, where: str = "") -> str:
    """`text` within `limit` characters; a cut one ends with a marker saying how much is missing
    and, with `where`, where the whole text still is."""
    text = clean(text)
    if len(text) <= limit:
        return text
    where = where[:300]
    keep = limit
    while True:  # the marker's length depends on the count it states: settle both
        marker = f"\n… [cut: {len(text) - keep} more characters"
        marker += f"; the whole text is in {where}]" if where else "]"
        settled = limit - len(marker)
        if settled >= keep:
            break
        keep = settled
    return text[:keep] + marker if keep > 0 else text[:limit]


def summary(body: str, tail: Iterable[str], where: str, fallback: str) -> str:
    """`body` then the `tail` lines (tags, dates: short and telling), within MAX_TEXT: the body
    is what gets cut, never the tail. Never empty (save_session needs a summary)."""
    lines = [clean(line) for line in tail if clean(line)]
    end = "\n\n" + "\n".join(lines) if lines else ""
    if len(end) > MAX_TEXT // 2:
        end = "\n\n" + cut("\n".join(lines), MAX_TEXT // 2)
    body = clean(body).strip()
    text = (cut(body, MAX_TEXT - len(end), where) if body else "") + end
    return text.strip() or cut(fallback)


def items(values: Iterable[str], where: str = "") -> list[str]:
    """At most MAX_ITEMS non-empty texts, each within MAX_TEXT; when more, the last item says how
    many were left out."""
    kept: list[str] = []
    left = 0
    for value in values:
        value = clean(value).strip()
        if not value:
            continue
        if len(kept) < MAX_ITEMS:
            kept.append(cut(value, MAX_TEXT, where))
        else:
            left += 1
    if left:
        kept[-1] = f"… and {left + 1} more (see {where or 'the source'})"
    return kept


def decisions(pairs: Iterable[tuple[str, str]], where: str = "") -> list[dict[str, str]]:
    """{decision, reason} items within the caps; both must be non-empty."""
    out: list[dict[str, str]] = []
    for decision, reason in pairs:
        decision, reason = clean(decision).strip(), clean(reason).strip()
        if decision and reason and len(out) < MAX_ITEMS:
            out.append({"decision": cut(decision, MAX_TEXT, where), "reason": cut(reason, MAX_TEXT, where)})
    return out


def slug(text: str, words: int = 6, limit: int = 48) -> str:
    """A few leading words of `text` for a readable session name: lower case, a-z0-9 and '-'."""
    picked = " ".join(text.split()[:words]).lower()
    return _SLUG.sub("-", picked).strip("-")[:limit].strip("-") or "untitled"


def name(*parts: str) -> str:
    """A session name from `parts` joined by '/', within MAX_NAME (the end is kept: it is the
    part that tells two sessions apart)."""
    joined = "/".join(clean(p).strip().strip("/") for p in parts if p and p.strip("/"))
    return (
        joined if len(joined) <= MAX_NAME else joined[: MAX_NAME // 2 - 1] + "…" + joined[-(MAX_NAME // 2) :]
    )


def record(
    name: str,
    summary: str,
    client: str,
    *,
    repo: str = "",
    plan: list[str] | None = None,
    decisions: list[dict[str, str]] | None = None,
    todos: list[str] | None = None,
    files: list[str] | None = None,
    errors: list[str] | None = None,
    tried: list[str] | None = None,
) -> dict[str, Any]:
    """save_session's arguments, every list present (empty lists included: the same content
    always gives the same record, so a second import adds no version)."""
    return {
        "name": name,
        "summary": summary,
        "repo": repo,
        "plan": plan or [],
        "decisions": decisions or [],
        "todos": todos or [],
        "files": files or [],
        "errors": errors or [],
        "tried": tried or [],
        "client": client[:MAX_CLIENT],
    }
