"""What every web page shares: the document around it (skip link, one <main> with its <h1>, the
signed-in navigation and sign-out form), our own links, the error-message page, timestamps and
the handoff badge. Here is the escaping rule the page modules follow: every value from saved
data, a query or the database goes through `e` (`html.escape`, attributes included), and links
are built by `link` from our own paths and `urlencode`d values."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from sessionvault.core import offers
from sessionvault.server.web.pages.style import STYLE

e = html.escape

NAV = (("sessions", "/", "Sessions"), ("handoffs", "/web/handoffs", "Handoffs"),
       ("clients", "/web/clients", "Clients"), ("activity", "/web/activity", "Activity"),
       ("keys", "/web/keys", "Keys"))  # fmt: skip
NO_REPO = "(no repository)"


@dataclass(frozen=True)
class Chrome:
    """What every signed-in page needs: where the server's paths start, the session's CSRF token
    (for the sign-out form) and which section of the site this is."""

    root: str
    csrf: str
    current: str = ""

    def url(self, path: str, **params: object) -> str:
        return link(self.root, path, **params)


def link(root: str, path: str, **params: object) -> str:
    """An escaped-ready URL of ours: `root` + `path` + the non-empty `params`, urlencoded."""
    query = urlencode({k: str(v) for k, v in params.items() if v not in ("", None)})
    return root + path + (f"?{query}" if query else "")


def _document(title: str, body: str) -> bytes:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · SessionVault</title><style>{STYLE}</style></head>"
        f'<body><a class="skip" href="#main">Skip to content</a>{body}</body></html>'
    ).encode()


def page(chrome: Chrome, title: str, content: str) -> bytes:
    items = "".join(
        f'<li><a href="{e(chrome.url(path))}"{current(key == chrome.current)}>{label}</a></li>'
        for key, path, label in NAV
    )
    header = (
        '<header class="top"><p class="brand">'
        f'<a href="{e(chrome.url("/"))}">SessionVault</a></p>'
        f'<nav aria-label="Main"><ul>{items}</ul></nav>'
        f'<form method="post" action="{e(chrome.url("/web/signout"))}" class="signout">'
        f'<input type="hidden" name="csrf" value="{e(chrome.csrf)}">'
        '<button type="submit">Sign out</button></form></header>'
    )
    main = f'<main id="main" tabindex="-1"><h1>{e(title)}</h1>{content}</main>'
    return _document(title, header + main)


def bare_page(title: str, content: str) -> bytes:
    """A page for someone not signed in (the sign-in page, an error before sign-in)."""
    return _document(title, f'<main id="main" tabindex="-1"><h1>{e(title)}</h1>{content}</main>')


def message(chrome: Chrome | None, root: str, title: str, text: str) -> bytes:
    back = f'<p><a href="{e(link(root, "/"))}">Back to SessionVault</a></p>'
    content = f'<p role="alert">{e(text)}</p>{back}'
    return page(chrome, title, content) if chrome else bare_page(title, content)


def table(caption: str, columns: Sequence[str], rows: Iterable[str], *, shown: bool = False) -> str:
    """A table of `rows` (each made by `row`) under `columns`; on a phone each row is a card, each
    cell under its column's name (style.py). `caption` is HTML, read out (or `shown`)."""
    heads = "".join(f'<th scope="col">{e(c)}</th>' for c in columns)
    caption = f"<caption>{caption}</caption>" if shown else f'<caption class="sr-only">{caption}</caption>'
    return (
        f'<table class="cards">{caption}<thead><tr>{heads}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def row(columns: Sequence[str], *cells: str, cls: str = "") -> str:
    """One row of `table`: each cell labelled with its column's name, for the phone's cards."""
    tds = "".join(f'<td data-label="{e(c)}">{cell}</td>' for c, cell in zip(columns, cells, strict=True))
    return f'<tr class="{e(cls)}">{tds}</tr>' if cls else f"<tr>{tds}</tr>"


def when(value: object) -> str:
    """A timestamp for people (UTC, to the minute) inside a <time> element."""
    if isinstance(value, datetime):
        value = value.isoformat(timespec="seconds")
    text = str(value or "")
    if not text:
        return '<span class="none">never</span>'
    shown = text[:16].replace("T", " ") + (" UTC" if text.endswith(("+00:00", "Z")) else "")
    return f'<time datetime="{e(text)}">{e(shown)}</time>'


def current(flag: bool) -> str:
    return ' aria-current="page"' if flag else ""


def handoff_badge(offered: Mapping[str, Any] | None) -> str:
    if not offered:
        return '<span class="none">none</span>'
    state = str(offered.get("state", ""))
    badge = f'<span class="badge {e(state)}">{e(state)}</span>'
    to = f" to <strong>{e(offered['to_client'])}</strong>" if offered.get("to_client") else ""
    for key, word in (("to_person", "to"), ("offered_by", "from")):  # a teammate's offer (docs/teams.md)
        to += f" {word} <strong>{e(offered[key])}</strong>" if offered.get(key) else ""
    if state == "accepted":
        by = e(offers.claimer(offered))
        key = f" (with <code>{e(offered['accepted_with'])}</code>)" if offered.get("accepted_with") else ""
        return f"{badge}{to} by <strong>{by}</strong>{key} at {when(offered.get('accepted_at'))}"
    if state == "open":
        return f"{badge}{to}, until {when(offered.get('expires_at'))}"
    if state == "expired":
        return f"{badge}{to} at {when(offered.get('expired_at'))}"
    return badge + to
