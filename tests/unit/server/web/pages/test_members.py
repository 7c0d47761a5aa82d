"""The members page and its confirmation: names are saved values (a person chose theirs, an
operator the workspace's), so every one is escaped; every form that changes something carries
the session's CSRF token and asks first; a key without delete is told why it sees no form."""

from __future__ import annotations

import re

from sessionvault.server.web.pages import layout, members

CHROME = layout.Chrome("", "csrf-token", "sessions")
HOSTILE = '<script>x</script>"'
ROWS = [
    {"name": "alice", "role": "owner", "added_at": "", "you": True},
    {"name": HOSTILE, "role": "member", "added_at": "", "you": False},
]


def forms(page: str) -> list[str]:
    """The page's own forms (the sign-out form in the header aside)."""
    main = page[page.index("<main") :]
    return re.findall(r'<form method="post".*?</form>', main, re.S)


def test_every_name_is_escaped_and_every_change_asks_first_with_the_token() -> None:
    page = members.members(CHROME, HOSTILE, ROWS, can_change=True, have=["delete", "read"], done="").decode()
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;&quot;" in page
    posted = forms(page)
    assert len(posted) == 5  # change and remove on each member, and the add form
    for form in posted:
        assert 'name="csrf" value="csrf-token"' in form and 'name="step" value="confirm"' in form
        assert 'name="workspace" value="&lt;script&gt;' in form


def test_without_delete_the_page_lists_and_says_why_it_offers_no_change() -> None:
    page = members.members(CHROME, "team", ROWS, can_change=False, have=["read", "write"], done="").decode()
    assert forms(page) == [] and "needs the <code>delete</code> scope" in page and "read, write" in page


def test_the_confirmation_applies_only_what_it_names() -> None:
    page = members.confirm(CHROME, "team", "remove", HOSTILE, "", was="member", you=False).decode()
    [form] = forms(page)
    assert 'name="step" value="apply"' in form and 'name="action" value="remove"' in form
    assert "<script>" not in page and 'name="role"' not in form
    yours = members.confirm(CHROME, "team", "role", "alice", "member", was="owner", you=True).decode()
    assert "This is you" in yours and 'name="role" value="member"' in yours
    promoted = members.confirm(CHROME, "t", "role", "a", "owner", was="member", you=True).decode()
    assert "This is you" not in promoted  # an owner made owner loses nothing
