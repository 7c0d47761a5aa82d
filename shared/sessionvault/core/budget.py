"""Token budgets: a rough count of what a reply costs a model, and packing results into it."""

from __future__ import annotations

import json
from typing import Any


def estimate_tokens(value: Any) -> int:
    """Characters / 4 of the JSON the tool returns: the usual rough rule, enough to pack a budget."""
    return len(json.dumps(value, default=str, ensure_ascii=False)) // 4 + 1


def pack(results: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
    """Keep the best results that fit the caller's token budget (0 = no budget)."""
    if not max_tokens:
        return {"results": results}
    kept, used = [], 0
    for hit in results:
        cost = estimate_tokens(hit)
        if used + cost > max_tokens:
            break
        kept.append(hit)
        used += cost
    return {"results": kept, "omitted": len(results) - len(kept), "estimated_tokens": used}
