"""The space switcher and the open handoffs to a person: the space shown is marked, only an
owner gets the members link, every link keeps its workspace, and saved names are escaped."""

from __future__ import annotations

from sessionvault.server.web.pages import layout, spaces

CHROME = layout.Chrome("/sv", "token", "sessions")


def test_the_switcher_marks_the_space_shown_and_links_owners_to_the_members() -> None:
    mine = [{"name": "ops", "role": "owner"}, {"name": "a&b", "role": "reader"}]
    html = spaces.switcher(CHROME, mine, "ops")
    assert '<a href="/sv/">Personal</a>' in html
    assert '<a href="/sv/?workspace=ops" aria-current="page">ops</a>' in html
    assert 'href="/sv/web/members?workspace=ops"' in html and "workspace=a%26b" in html
    assert html.count("members</a>") == 1  # a reader manages nothing
    assert 'aria-current="page">Personal' in spaces.switcher(CHROME, mine, "")


def test_the_offers_to_you_name_their_space_and_who_offered_them() -> None:
    offers = [
        {"workspace": "ops", "name": "<b>x</b>", "version": 2, "repo": "r", "offered_by": "alice",
         "to_you": True, "to_client": "", "offered_at": "", "expires_at": ""},
        {"workspace": "", "name": "mine", "version": 1, "repo": "", "offered_by": None,
         "to_you": False, "to_client": "codex", "offered_at": "", "expires_at": ""},
    ]  # fmt: skip
    html = spaces.offers_to_you(CHROME, offers)
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "workspace=ops" in html and "you, from <strong>alice</strong>" in html
    assert "the client <strong>codex</strong>" in html and ">personal<" in html
    assert "No open handoff" in spaces.offers_to_you(CHROME, [])
