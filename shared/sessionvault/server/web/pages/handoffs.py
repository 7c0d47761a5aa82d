"""The handoffs page: the open handoffs offered to the person across their spaces (`to_you`,
pages/spaces.py), then every handoff of their personal space, newest first, and its state (open
until when, accepted by which client with which key, or expired)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessionvault.server.web.pages.layout import NO_REPO, Chrome, e, handoff_badge, page, row, table, when

COLUMNS = ("Session", "Version", "Repository", "Offered", "State")


def handoffs(chrome: Chrome, offers: Sequence[Mapping[str, Any]], to_you: str = "") -> bytes:
    if not offers:
        content = '<p class="none">No handoffs offered yet (save_session with handoff=true offers one).</p>'
    else:
        rows = (
            row(
                COLUMNS,
                f'<a href="{e(chrome.url("/web/session", name=o["name"], version=o.get("version")))}">'
                f"{e(o['name'])}</a>",
                e(str(o.get("version", ""))),
                e(o.get("repo") or NO_REPO),
                when(o.get("offered_at")),
                handoff_badge(o),
            )
            for o in offers
        )
        content = (
            "<p>Every handoff offered, newest first: open ones wait for the next client; an accepted one "
            "names the client that claimed it (as it called itself) and the key it claimed with.</p>"
            + table("Handoffs", COLUMNS, rows)
        )
    if to_you:
        mine = '<h2 id="offered">Every handoff of your personal space</h2>'
        content = f'{to_you}<section aria-labelledby="offered">{mine}{content}</section>'
    return page(chrome, "Handoffs", content)
