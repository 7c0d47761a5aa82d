"""The activity page: the account's most recent requests from the audit trail (which tool or
page, the outcome, when, and the OAuth client for a token's call), and what the trail leaves out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessionvault.server.web.pages.layout import Chrome, e, page, when


def activity(chrome: Chrome, rows: Sequence[Mapping[str, Any]]) -> bytes:
    intro = (
        "<p>Your account's most recent requests, from the audit trail: which tool or page, the outcome "
        "and when, and the OAuth client for a call made with a token. The trail does not record which of "
        "your API keys made a call, nor anything you saved.</p>"
    )
    if not rows:
        return page(chrome, "Activity", intro + '<p class="none">No activity recorded.</p>')
    cells = []
    for r in rows:
        outcome = "ok" if r["outcome"] == "ok" else f"error ({r.get('error_class') or 'unknown'})"
        cls = "ok" if r["outcome"] == "ok" else "error"
        client = (
            f"OAuth client <code>{e(r['oauth_client_id'])}</code>" if r.get("oauth_client_id") else "API key"
        )
        cells.append(
            f"<tr><td>{when(r['at'])}</td><td><code>{e(r['tool'])}</code></td>"
            f'<td><span class="{cls}">{e(outcome)}</span></td><td>{client}</td></tr>'
        )
    table = (
        '<table><caption class="sr-only">Recent activity</caption><thead><tr><th scope="col">When</th>'
        '<th scope="col">Tool or page</th><th scope="col">Outcome</th><th scope="col">Client</th>'
        "</tr></thead>"
        f"<tbody>{''.join(cells)}</tbody></table>"
    )
    return page(chrome, "Activity", intro + table)
