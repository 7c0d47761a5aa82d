import pytest

from sessionvault.core.budget import estimate_tokens, fit
from sessionvault.core.records import LoadArgs, SaveArgs, ValidationFailed, parse

ORDER = ("summary", "todos", "decisions", "plan", "errors", "files", "tried")


def record(**over):
    base = {
        "found": True,
        "name": "n",
        "summary": "s" * 100,
        "todos": [],
        "decisions": [],
        "plan": [],
        "errors": [],
        "files": [],
        "tried": [],
    }
    return {**base, **over}


def test_no_cut_when_it_fits():
    out = fit(record(todos=["a"]), 10_000, ORDER)
    assert out["todos"] == ["a"] and out["omitted"] == {} and "truncated" not in out


@pytest.mark.parametrize("budget", [60, 100, 200, 400, 1000])
def test_lists_are_cut_in_priority_order_and_reported(budget):
    full = record(
        todos=[f"todo {i}" for i in range(40)], files=[f"f{i}.py" for i in range(80)], tried=["t" * 50] * 30
    )
    out = fit(full, budget, ORDER)
    assert estimate_tokens(out) <= budget
    assert list(out)[:2] == ["found", "name"]
    for field in ("todos", "files", "tried"):
        assert out[field] == full[field][: len(out[field])]
        assert out["omitted"].get(field, 0) == len(full[field]) - len(out[field])
    # a later field only gets items when every earlier one is whole
    if out["omitted"].get("todos"):
        assert out["files"] == [] and out["tried"] == []


def test_a_long_summary_is_shortened_and_named():
    out = fit(record(summary="ü" * 4000, todos=["a"]), 200, ORDER)
    assert out["summary"].endswith("…") and out["truncated"] == ["summary"]
    assert out["todos"] == [] and out["omitted"] == {"todos": 1}
    assert estimate_tokens(out) <= 200


def test_commit_and_branch_are_checked():
    assert parse(SaveArgs, {"name": "n", "summary": "s", "commit": "ABCDEF1"}).commit == "abcdef1"
    for bad in ("abcdef", "g" * 7, "a" * 41):
        with pytest.raises(ValidationFailed):
            parse(SaveArgs, {"name": "n", "summary": "s", "commit": bad})
    with pytest.raises(ValidationFailed):
        parse(SaveArgs, {"name": "n", "summary": "s", "branch": "x\x00"})
    with pytest.raises(ValidationFailed):
        parse(LoadArgs, {"name": "n", "accept": True})
