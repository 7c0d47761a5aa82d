"""One rule for the names of people and workspaces (issue 35 item 5): each shape the review
tried, and the ones a real team uses, judged as the rule says."""

from __future__ import annotations

import pytest

from sessionvault.core import tenant_names

CYRILLIC_E = "\u0435"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("t" + CYRILLIC_E + "am", "mixes scripts"),  # a Cyrillic e in a Latin name
        ("p\u03c1a", "mixes scripts"),  # a Greek rho for a p
        (" bob", "space"),
        ("bob ", "space"),
        ("bob\u200b", "invisible"),  # zero-width space
        ("al\u202eice", "invisible"),  # a bidi override
        ("a\u0007b", "invisible"),  # a control character
        ("", "empty"),
        ("x" * 65, "longer than 64"),
    ],
)
def test_a_name_that_breaks_the_rule_says_why(name: str, why: str) -> None:
    assert why in tenant_names.problem(name)


@pytest.mark.parametrize(
    "name", ["alice", "Alice", "platform-team", "dev_ops 2", "Jürgen", "日本チーム", "한국팀", "ΣΟΦΊΑ"]
)
def test_names_people_use_keep_it(name: str) -> None:
    assert tenant_names.problem(name) == ""


def test_the_canonical_form_is_nfkc_and_case_is_ignored_for_uniqueness() -> None:
    assert tenant_names.canonical("\uff54\uff45\uff41\uff4d") == "team"  # fullwidth letters
    assert tenant_names.key("Team") == tenant_names.key("team") == tenant_names.key("\uff34eam")


def test_existing_names_are_reported_with_their_problem_or_their_case_twin() -> None:
    names = ["team", "Team", " bob", "alice"]
    assert tenant_names.problems(names) == [
        "",
        "differs from 'team' by letter case only",
        "it starts or ends with a space",
        "",
    ]
