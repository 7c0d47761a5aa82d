"""One ranking of the hits by meaning and by keyword: reciprocal rank fusion over each list
above its floor, a hit both found first, and each hit saying why it matched."""

from __future__ import annotations

from sessionvault.service import answers


def meaning(name: str, score: float) -> dict[str, object]:
    return {"id": name, "name": name, "distance": 1 - score}


def keyword(name: str, score: float, cover: float = 1.0, distance: float | None = None) -> dict[str, object]:
    return {"id": name, "name": name, "keyword_score": score, "keyword_cover": cover, "distance": distance}


def test_a_hit_both_lists_found_comes_first_and_says_both():
    fused = answers.fused(
        [meaning("a", 0.8), meaning("b", 0.7)], [keyword("b", 5.0), keyword("c", 4.0)], limit=5
    )
    assert [(h["name"], h["matched"]) for h in fused] == [("b", "both"), ("a", "meaning"), ("c", "keyword")]


def test_each_list_keeps_only_what_is_above_its_floor():
    by_meaning = [meaning("close", 0.6), meaning("far", 0.2)]  # under half the best: dropped
    by_keyword = [keyword("names-it", 6.0), keyword("one-word", 1.0), keyword("thin", 5.0, cover=0.3)]
    fused = answers.fused(by_meaning, by_keyword, limit=5)
    assert {h["name"] for h in fused} == {"close", "names-it"}


def test_the_fused_list_is_cut_at_the_limit_and_empty_lists_give_nothing():
    many = [meaning(f"m{i}", 0.9 - i / 100) for i in range(8)]
    assert len(answers.fused(many, [], limit=3)) == 3
    assert answers.fused([], [], limit=5) == []


def test_a_keyword_hit_without_a_vector_has_no_score_but_says_why_it_matched():
    shown = answers.hit(
        {"saved_at": "t", "summary": "s"},
        {**keyword("k", 3.0), "version": 1, "repo": "", "matched": "keyword"},
    )
    assert shown["matched"] == "keyword" and "score" not in shown
