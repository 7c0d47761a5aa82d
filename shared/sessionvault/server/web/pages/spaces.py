"""The pieces of the pages that name a space (docs/teams.md): the switcher between the signed-in
person's personal space and each workspace they belong to, the line that says which workspace
a session page is in, and the open handoffs offered to the person across all their spaces."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessionvault.server.web.pages.layout import NO_REPO, Chrome, current, e, when

PERSONAL = "Personal"


def switcher(chrome: Chrome, spaces: Sequence[Mapping[str, str]], workspace: str) -> str:
    """Links to the sessions of each space (the one shown marked), with each workspace's role
    and, for an owner, its members page."""
    items = [f'<li><a href="{e(chrome.url("/"))}"{current(not workspace)}>{PERSONAL}</a></li>']
    for s in spaces:
        name, role = str(s["name"]), str(s["role"])
        members = ""
        if role == "owner":
            href = chrome.url("/web/members", workspace=name)
            members = f' · <a href="{e(href)}" aria-label="Members of {e(name)}">members</a>'
        items.append(
            f'<li><a href="{e(chrome.url("/", workspace=name))}"{current(name == workspace)}>{e(name)}</a>'
            f' <span class="muted">({e(role)})</span>{members}</li>'
        )
    label = '<span class="muted">Spaces:</span>'
    return f'<nav aria-label="Spaces" class="spaces">{label}<ul>{"".join(items)}</ul></nav>'


def in_space(chrome: Chrome, workspace: str) -> str:
    """Which workspace a session page shows, linked to its sessions ('' for the personal space)."""
    if not workspace:
        return ""
    href = chrome.url("/", workspace=workspace)
    return f'<p class="space">In workspace <a href="{e(href)}"><strong>{e(workspace)}</strong></a></p>'


def offers_to_you(chrome: Chrome, offers: Sequence[Mapping[str, Any]]) -> str:
    """The open handoffs offered to the person, newest first, whichever space they are in."""
    if not offers:
        body = '<p class="none">No open handoff is waiting for you in any of your spaces.</p>'
    else:
        rows = "".join(_offer_row(chrome, o) for o in offers)
        body = (
            '<table><caption class="sr-only">Open handoffs to you</caption><thead><tr>'
            '<th scope="col">Session</th><th scope="col">Space</th><th scope="col">Repository</th>'
            '<th scope="col">Offered</th><th scope="col">For</th><th scope="col">Open until</th>'
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    return (
        '<section aria-labelledby="to-you"><h2 id="to-you">Open handoffs to you</h2>'
        "<p>Across your spaces: your own, and each workspace where you are an owner or member. "
        "Your next client claims one with load_session (repo, accept=true).</p>"
        f"{body}</section>"
    )


def _offer_row(chrome: Chrome, o: Mapping[str, Any]) -> str:
    workspace = str(o.get("workspace") or "")
    href = chrome.url("/web/session", name=o["name"], version=o.get("version"), workspace=workspace)
    space = e(workspace) if workspace else f'<span class="muted">{PERSONAL.lower()}</span>'
    if o.get("to_you"):
        target = "you"
    elif o.get("to_client"):
        target = f"the client <strong>{e(o['to_client'])}</strong>"
    else:
        target = "any member" if workspace else "any client"
    by = f", from <strong>{e(o['offered_by'])}</strong>" if workspace and o.get("offered_by") else ""
    version = f'<span class="muted">v{e(str(o.get("version")))}</span>'
    return (
        f'<tr><td><a href="{e(href)}">{e(o["name"])}</a> {version}</td>'
        f"<td>{space}</td><td>{e(o.get('repo') or NO_REPO)}</td><td>{when(o.get('offered_at'))}</td>"
        f"<td>{target}{by}</td><td>{when(o.get('expires_at'))}</td></tr>"
    )
