"""The web view's session list: each row's handoff cell names the version offered (the row
shows the latest version; an open offer of v1 beside v2 is not an offer of v2)."""

from __future__ import annotations

import re

from sessionvault.server.web.pages import layout, listing

CHROME = layout.Chrome("", "token", "sessions")


def cells(page: bytes) -> list[str]:
    """The text of each cell of the first row, tags removed."""
    row = re.search(r"<tbody><tr>(.*?)</tr>", page.decode(), re.S)
    assert row is not None
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]


def listed(**handoff: object) -> bytes:
    entry = {"name": "feature", "repo": "r", "preview": "", "version": 2, "client": "codex", "updated_at": ""}
    if handoff:
        entry["handoff"] = handoff
    return listing.sessions(CHROME, [("r", [entry])], form="", repo="", older="")


def test_the_handoff_cell_names_the_version_offered() -> None:
    version, handoff = cells(listed(state="open", version=1, to_client="gemini", expires_at=""))[1::3]
    assert version == "2" and handoff.startswith("v1 open to gemini")
    assert cells(listed(state="accepted", version=2, accepted_by="codex", accepted_at=""))[4].startswith(
        "v2 accepted"
    )
    assert cells(listed())[4] == "none"


def test_every_cell_is_labelled_with_its_column_for_the_phones_cards() -> None:
    page = listed().decode()
    labels = re.findall(r'<td data-label="([^"]+)">', page)
    heads = re.findall(r'<th scope="col">([^<]+)</th>', page)
    assert labels == heads == list(listing.SESSION_COLUMNS) and '<table class="cards">' in page
