"""The handoffs page: the open handoffs offered to the person across their spaces (`to_you`,
pages/spaces.py), then every handoff of their personal space, newest first, and its state (open
until when, accepted by which client with which key, or expired)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessionvault.server.web.pages.layout import NO_REPO, Chrome, e, handoff_badge, page, when


def handoffs(chrome: Chrome, offers: Sequence[Mapping[str, Any]], to_you: str = "") -> bytes:
    if not offers:
        content = '<p class="none">No handoffs offered yet (save_session with handoff=true offers one).</p>'
    else:
        rows = "".join(
            f'<tr><td><a href="{e(chrome.url("/web/session", name=o["name"], version=o.get("version")))}">'
            f"{e(o['name'])}</a></td><td>{e(str(o.get('version', '')))}</td>"
            f"<td>{e(o.get('repo') or NO_REPO)}</td>"
            f"<td>{when(o.get('offered_at'))}</td><td>{handoff_badge(o)}</td></tr>"
            for o in offers
        )
        content = (
            "<p>Every handoff offered, newest first: open ones wait for the next client; an accepted one "
            "names the client that claimed it (as it called itself) and the key it claimed with.</p>"
            '<table><caption class="sr-only">Handoffs</caption><thead><tr><th scope="col">Session</th>'
            '<th scope="col">Version</th><th scope="col">Repository</th><th scope="col">Offered</th>'
            f'<th scope="col">State</th></tr></thead><tbody>{rows}</tbody></table>'
        )
    if to_you:
        mine = '<h2 id="offered">Every handoff of your personal space</h2>'
        content = f'{to_you}<section aria-labelledby="offered">{mine}{content}</section>'
    return page(chrome, "Handoffs", content)
