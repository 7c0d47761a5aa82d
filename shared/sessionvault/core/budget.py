"""Token budgets: a rough count of what a reply costs a model, and packing results into it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def estimate_tokens(value: Any) -> int:
    """Characters / 4 of the JSON the tool returns: the usual rough rule, enough to pack a budget."""
    return len(json.dumps(value, default=str, ensure_ascii=False)) // 4 + 1


def pack(results: list[dict[str, Any]], max_tokens: int, overhead: int = 0) -> dict[str, Any]:
    """Keep the best results that fit the caller's token budget (0 = no budget), of which
    `overhead` characters go to what is sent around them (the notes frame)."""
    if not max_tokens:
        return {"results": results}
    kept, used = [], -(-overhead // 4)
    for hit in results:
        cost = estimate_tokens(hit)
        if used + cost > max_tokens:
            break
        kept.append(hit)
        used += cost
    return {"results": kept, "omitted": len(results) - len(kept), "estimated_tokens": used}


def _chars(value: Any) -> int:
    return len(json.dumps(value, default=str, ensure_ascii=False))


def fit(
    result: dict[str, Any], max_tokens: int, priority: Sequence[str], overhead: int = 0
) -> dict[str, Any]:
    """`result` cut to about `max_tokens`, of which `overhead` characters go to what is sent
    around it (the notes frame): the budget covers what the model receives. The fields named in
    `priority` come after the rest, most useful first; lists are cut to a prefix rather than
    dropped, text is shortened, and once a field is cut the later ones are left empty. What was
    left out is reported: "omitted" maps a field to the number of items cut, "truncated" names
    shortened text, "dropped" text that had no room at all."""
    kept = {k: v for k, v in result.items() if k not in priority}
    fields = [f for f in priority if f in result]
    # The shape stays: every field is present (maybe empty), and the report fits too. A text
    # field is named in "truncated" or "dropped", never both: the longer label is reserved.
    worst_report = {
        "omitted": {f: MAX_COUNT for f in fields},
        "truncated": list(fields),
        "estimated_tokens": 10**6,
    }
    skeleton = {**kept, **{f: "" if isinstance(result[f], str) else [] for f in fields}, **worst_report}
    room = max_tokens * 4 - _chars(skeleton) - overhead - 4  # characters left for the fields' contents
    out = dict(kept)
    omitted: dict[str, int] = {}
    truncated: list[str] = []
    dropped: list[str] = []
    full = True  # no field cut yet
    for field in fields:
        value = result[field]
        if isinstance(value, str):
            cost = _chars(value) - 2
            if full and cost <= room:
                out[field], room = value, room - cost
                continue
            text = _shorten(value, room) if full else ""
            out[field], room = text, room - (_chars(text) - 2)
            (truncated if text else dropped).append(field)
            full = False
        elif isinstance(value, list):
            items: list[Any] = []
            for item in value if full else []:
                cost = _chars(item) + 2  # and the separator
                if cost > room:
                    break
                items.append(item)
                room -= cost
            out[field] = items
            if len(items) < len(value):
                omitted[field] = len(value) - len(items)
                full = False
        else:
            out[field] = value
    out["omitted"] = omitted
    if truncated:
        out["truncated"] = truncated
    if dropped:
        out["dropped"] = dropped
    out["estimated_tokens"] = 0
    out["estimated_tokens"] = estimate_tokens(out) + overhead // 4
    return out


MAX_COUNT = 10**4  # a sure upper bound of any list's length in a record (records.MAX_ITEMS)


def _shorten(text: str, room: int) -> str:
    """The longest prefix of `text` (with an ellipsis) whose JSON fits `room` characters."""
    n = max(0, room - 1)
    while n > 0 and _chars(text[:n] + "…") - 2 > room:
        n -= max(1, (_chars(text[:n] + "…") - 2 - room) // 2)
    return text[:n] + "…" if n > 0 else ""
