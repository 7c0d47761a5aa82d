"""Token budgets: a rough cost per result, and packing the best results into a caller's budget."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessionvault.core.budget import estimate_tokens, pack


def hit(name: str, size: int = 40) -> dict[str, Any]:
    return {"name": name, "preview": "x" * size, "score": 0.5}


def cost(*hits: dict[str, Any]) -> int:
    return sum(estimate_tokens(h) for h in hits)


# --- estimate_tokens --------------------------------------------------------------------------


@pytest.mark.parametrize("value", [{}, [], "", 0, None, {"a": "b" * 1000}, ["é" * 10]])
def test_a_token_is_four_characters_of_the_json_rounded_up_by_one(value: Any) -> None:
    assert estimate_tokens(value) == len(json.dumps(value, ensure_ascii=False)) // 4 + 1


def test_nothing_costs_at_least_one_token() -> None:
    assert estimate_tokens({}) == 1


def test_non_ascii_text_counts_as_characters_not_escapes() -> None:
    assert estimate_tokens("é" * 400) == estimate_tokens("e" * 400)


def test_values_json_cannot_encode_are_counted_by_their_text() -> None:
    from datetime import datetime

    stamp = datetime(2026, 1, 2, 3, 4, 5)
    assert estimate_tokens({"at": stamp}) == estimate_tokens({"at": str(stamp)})


# --- pack -------------------------------------------------------------------------------------


def test_a_budget_of_0_means_no_budget_and_keeps_everything_as_is() -> None:
    results = [hit(str(i), 4000) for i in range(20)]
    assert pack(results, 0) == {"results": results}


def test_no_budget_reports_neither_omitted_nor_estimated_tokens() -> None:
    assert set(pack([hit("a")], 0)) == {"results"}


def test_a_budget_that_fits_everything_keeps_everything_and_omits_nothing() -> None:
    results = [hit("a"), hit("b"), hit("c")]
    assert pack(results, 10_000) == {"results": results, "omitted": 0, "estimated_tokens": cost(*results)}


def test_the_best_results_are_kept_in_their_order() -> None:
    results = [hit("best"), hit("second"), hit("third"), hit("fourth")]
    budget = cost(*results[:2])
    packed = pack(results, budget)
    assert packed["results"] == results[:2]
    assert packed["omitted"] == 2
    assert packed["estimated_tokens"] == budget


def test_a_result_that_exactly_fills_the_budget_is_kept() -> None:
    results = [hit("a"), hit("b")]
    assert pack(results, cost(*results))["results"] == results
    assert pack(results, cost(*results) - 1)["results"] == results[:1]


def test_packing_stops_at_the_first_result_that_does_not_fit_even_if_a_later_one_would() -> None:
    big, small = hit("big", 2000), hit("small", 4)
    results = [hit("a"), big, small]
    packed = pack(results, cost(results[0], small) + 1)
    assert packed["results"] == [results[0]]  # "small" would fit, but it ranks below "big"
    assert packed["omitted"] == 2
    assert packed["estimated_tokens"] == cost(results[0])


def test_a_budget_smaller_than_the_best_result_keeps_nothing() -> None:
    results = [hit("a", 400), hit("b", 4)]
    assert pack(results, estimate_tokens(results[0]) - 1) == {
        "results": [],
        "omitted": 2,
        "estimated_tokens": 0,
    }


def test_no_results_pack_to_no_results() -> None:
    assert pack([], 100) == {"results": [], "omitted": 0, "estimated_tokens": 0}
    assert pack([], 0) == {"results": []}


def test_packing_does_not_change_the_callers_list() -> None:
    results = [hit("a"), hit("b", 4000)]
    before = list(results)
    pack(results, cost(results[0]))
    assert results == before
