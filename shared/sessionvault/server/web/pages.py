"""The web view's HTML: server-rendered, no script, no external resource. Every value that comes
from saved data, a query or the database goes through `html.escape` (attributes included) and
nothing else builds markup; links are built from our own paths and `urlencode`d values.

Keyboard and assistive technology: a skip link, one <main> with an <h1>, landmarks named, every
control labelled (a <label for> or an aria-label naming what it acts on), tables with headers
and captions, the current page marked with aria-current, diffs spelled out ("Added:",
"Removed:") for screen readers, and a visible focus ring."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from sessionvault.server.web.diff import SECTIONS, SectionDiff, decision_text

e = html.escape

STYLE = (
    ":root{color-scheme:light;--fg:#1d2330;--muted:#5b6474;--line:#d9dde5;--bg:#f6f7f9;--accent:#1f5fbf;"
    "--ok:#17663a;--warn:#8a5a00;--bad:#b00020}"
    "*{box-sizing:border-box}"
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:var(--fg);"
    "background:var(--bg);line-height:1.45}"
    "a{color:var(--accent)}a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,"
    "main:focus-visible{outline:3px solid #f5a623;outline-offset:2px}"
    ".skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5rem 1rem}.skip:focus{left:1rem}"
    ".top{display:flex;flex-wrap:wrap;align-items:center;gap:1rem 2rem;padding:.75rem 1.5rem;"
    "background:#1d2330;color:#fff}.top a{color:#fff}"
    ".brand{margin:0;font-weight:700;font-size:1.1rem}.brand a{text-decoration:none}"
    ".top ul{display:flex;gap:1.25rem;list-style:none;margin:0;padding:0}"
    ".top [aria-current=page]{font-weight:700;text-decoration-thickness:3px}"
    ".signout{margin-left:auto}"
    "main{max-width:64rem;margin:0 auto;padding:1.5rem}"
    "h1{font-size:1.6rem;margin:.25rem 0 1rem}h2{font-size:1.2rem;margin:1.75rem 0 .5rem}"
    "h3{font-size:1rem;margin:1.25rem 0 .35rem}"
    "section.card,form.panel{background:#fff;border:1px solid var(--line);border-radius:8px;"
    "padding:.75rem 1.25rem;margin:1rem 0}"
    "table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line)}"
    "caption{text-align:left;font-weight:600;padding:.4rem 0}"
    "th,td{text-align:left;padding:.45rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}"
    "th{background:#eef0f4;font-weight:600}"
    "code{background:#eef0f4;padding:0 .25rem;border-radius:3px;word-break:break-all}"
    ".muted,.none{color:var(--muted)}.preview{display:block;color:var(--muted);font-size:.9rem}"
    ".text{white-space:pre-wrap}"
    ".badge{display:inline-block;padding:0 .5rem;border-radius:999px;font-size:.85rem;font-weight:600;"
    "border:1px solid currentColor}"
    ".open{color:var(--accent)}.accepted,.ok,.active{color:var(--ok)}.expired,.superseded{color:var(--warn)}"
    ".error,.revoked{color:var(--bad)}"
    "label{font-weight:600;margin-right:.35rem}"
    "input,select{font:inherit;padding:.4rem .5rem;border:1px solid #9aa3b2;border-radius:4px}"
    "input[type=password]{width:100%;margin:.35rem 0 1rem}"
    "button{font:inherit;padding:.4rem 1rem;border-radius:4px;border:1px solid #1f5fbf;background:#1f5fbf;"
    "color:#fff;cursor:pointer}"
    "button.secondary{background:#fff;color:#1f5fbf}button.danger{background:var(--bad);border-color:var(--bad)}"
    ".top button{background:transparent;border-color:#fff}"
    ".search{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center}"
    "ul.diff{list-style:none;padding:0;margin:0;font-family:ui-monospace,monospace;font-size:.9rem}"
    "ul.diff li{padding:.1rem .5rem;white-space:pre-wrap}"
    "ul.diff li.add{background:#e6f4ea}ul.diff li.del{background:#fce8e6}"
    "ins,del{text-decoration:none}"
    "dl.decisions dt{font-weight:600;margin-top:.5rem}dl.decisions dd{margin:0 0 0 1rem}"
    ".notice{background:#fff8e1;border:1px solid #e0c060;padding:.5rem 1rem;border-radius:6px}"
    ".sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}"
    ".signin{max-width:32rem}"
    ".card h2{margin-top:.35rem}time,.nowrap{white-space:nowrap;word-break:normal}"
    ".versions [aria-current=page]{font-weight:700;text-decoration:none;color:var(--fg)}"
    ".versions ul{display:flex;flex-wrap:wrap;gap:.25rem 1.25rem;list-style:none;padding:0;margin:.25rem 0}"
)

NAV = (("sessions", "/", "Sessions"), ("handoffs", "/web/handoffs", "Handoffs"),
       ("activity", "/web/activity", "Activity"), ("keys", "/web/keys", "Keys"))  # fmt: skip
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
        f'<li><a href="{e(chrome.url(path))}"{_current(key == chrome.current)}>{label}</a></li>'
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


def when(value: object) -> str:
    """A timestamp for people (UTC, to the minute) inside a <time> element."""
    if isinstance(value, datetime):
        value = value.isoformat(timespec="seconds")
    text = str(value or "")
    if not text:
        return '<span class="none">never</span>'
    shown = text[:16].replace("T", " ") + (" UTC" if text.endswith(("+00:00", "Z")) else "")
    return f'<time datetime="{e(text)}">{e(shown)}</time>'


def _current(flag: bool) -> str:
    return ' aria-current="page"' if flag else ""


def _score(hit: Mapping[str, Any]) -> str:
    return e(str(hit["score"])) if "score" in hit else '<span class="none">text match</span>'


def _none(items: Sequence[Any] | str | None) -> str | None:
    return '<p class="none">None recorded.</p>' if not items else None


# --- signing in -------------------------------------------------------------------------------


def signin(root: str, csrf: str, *, error: str = "", notice: str = "") -> bytes:
    problem = f'<p class="error" role="alert">{e(error)}</p>' if error else ""
    told = f'<p class="notice" role="status">{e(notice)}</p>' if notice else ""
    content = (
        '<div class="signin">'
        "<p>See your saved sessions, handoffs, activity and keys. Sign in with one of your API keys "
        "(<code>sv_live_...</code>, from <code>sessionvault key create</code>). The key travels once, in "
        "this form; your browser then keeps only a sealed, short-lived cookie (30 minutes), never "
        "the key.</p>"
        f"{told}{problem}"
        f'<form method="post" action="{e(link(root, "/web/signin"))}" class="panel">'
        f'<input type="hidden" name="csrf" value="{e(csrf)}">'
        '<label for="api_key">API key</label>'
        '<input type="password" id="api_key" name="api_key" autocomplete="off" required>'
        '<button type="submit">Sign in</button></form></div>'
    )
    return bare_page("Sign in to SessionVault", content)


# --- sessions -----------------------------------------------------------------------------------


def handoff_badge(offered: Mapping[str, Any] | None) -> str:
    if not offered:
        return '<span class="none">none</span>'
    state = str(offered.get("state", ""))
    badge = f'<span class="badge {e(state)}">{e(state)}</span>'
    to = f" to <strong>{e(offered['to_client'])}</strong>" if offered.get("to_client") else ""
    if state == "accepted":
        by = e(offered.get("accepted_by") or "an unnamed client")
        key = f" (with <code>{e(offered['accepted_with'])}</code>)" if offered.get("accepted_with") else ""
        return f"{badge}{to} by <strong>{by}</strong>{key} at {when(offered.get('accepted_at'))}"
    if state == "open":
        return f"{badge}{to}, until {when(offered.get('expires_at'))}"
    if state == "expired":
        return f"{badge}{to} at {when(offered.get('expired_at'))}"
    return badge + to


def _session_rows(chrome: Chrome, sessions: Iterable[Mapping[str, Any]]) -> str:
    rows = []
    for s in sessions:
        href = chrome.url("/web/session", name=s["name"])
        preview = f'<span class="preview">{e(s["preview"])}</span>' if s.get("preview") else ""
        unverified = (
            ' <span class="muted">(listing not verified: open it)</span>' if s.get("unverified") else ""
        )
        rows.append(
            f'<tr><td><a href="{e(href)}">{e(s["name"])}</a>{unverified}{preview}</td>'
            f"<td>{e(str(s['version']))}</td><td>{e(s.get('client') or '')}</td>"
            f"<td>{when(s.get('updated_at'))}</td><td>{handoff_badge(s.get('handoff'))}</td></tr>"
        )
    return "".join(rows)


_SESSION_HEAD = (
    '<thead><tr><th scope="col">Session</th><th scope="col">Version</th><th scope="col">Client</th>'
    '<th scope="col">Saved</th><th scope="col">Handoff</th></tr></thead>'
)


def search_form(chrome: Chrome, q: str, repo: str, repos: Sequence[str]) -> str:
    options = '<option value="">All repositories</option>' + "".join(
        f'<option value="{e(r)}"{" selected" if r == repo else ""}>{e(r or NO_REPO)}</option>'
        for r in repos
        if r
    )
    return (
        f'<form method="get" action="{e(chrome.url("/"))}" role="search" class="search panel">'
        '<label for="q">Search sessions</label>'
        f'<input type="search" id="q" name="q" value="{e(q)}" maxlength="1000">'
        f'<label for="repo">Repository</label><select id="repo" name="repo">{options}</select>'
        '<button type="submit">Search</button></form>'
    )


def sessions(
    chrome: Chrome,
    groups: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    *,
    form: str,
    repo: str,
    older: str,
) -> bytes:
    parts = [form]
    if repo:
        parts.append(
            f"<p>Showing <strong>{e(repo)}</strong> only. "
            f'<a href="{e(chrome.url("/"))}">All repositories</a></p>'
        )
    if not groups:
        parts.append(
            '<p class="none">No sessions saved yet. Save one from your AI client with save_session.</p>'
        )
    for n, (name, entries) in enumerate(groups, start=1):
        heading = e(name or NO_REPO)
        filtered = chrome.url("/", repo=name) if name else ""
        more = (
            f' <a href="{e(filtered)}" class="muted">only this repository</a>'
            if filtered and not repo
            else ""
        )
        parts.append(
            f'<section aria-labelledby="repo-{n}"><h2 id="repo-{n}">{heading}{more}</h2>'
            f'<table><caption class="sr-only">Sessions in {heading}</caption>{_SESSION_HEAD}'
            f"<tbody>{_session_rows(chrome, entries)}</tbody></table></section>"
        )
    if older:
        parts.append(f'<p><a href="{e(older)}">Older sessions</a></p>')
    return page(chrome, "Sessions", "".join(parts))


def search_results(
    chrome: Chrome, q: str, hits: Sequence[Mapping[str, Any]], *, form: str, notice: str
) -> bytes:
    told = f'<p class="notice" role="status">{e(notice)}</p>' if notice else ""
    if not hits:
        body = '<p class="none">Nothing matched.</p>'
    else:
        rows = "".join(
            f'<tr><td><a href="{e(chrome.url("/web/session", name=h["name"]))}">{e(h["name"])}</a>'
            f'<span class="preview">{e(h.get("summary") or h.get("preview") or "")}</span></td>'
            f"<td>{e(h.get('repo') or NO_REPO)}</td><td>{e(str(h.get('version', '')))}</td>"
            f"<td>{_score(h)}</td></tr>"
            for h in hits
        )
        body = (
            f'<table><caption>Results for “{e(q)}”</caption><thead><tr><th scope="col">Session</th>'
            '<th scope="col">Repository</th><th scope="col">Version</th><th scope="col">Score</th>'
            "</tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    back = f'<p><a href="{e(chrome.url("/"))}">All sessions</a></p>'
    return page(chrome, "Search", form + told + body + back)


def _items(items: Sequence[Any], ordered: bool = False, code: bool = False) -> str:
    if none := _none(items):
        return none
    tag = "ol" if ordered else "ul"
    inner = "".join(f"<li><code>{e(str(i))}</code></li>" if code else f"<li>{e(str(i))}</li>" for i in items)
    return f"<{tag}>{inner}</{tag}>"


def _decisions(items: Sequence[Any]) -> str:
    if none := _none(items):
        return none
    rows = []
    for d in items:
        if isinstance(d, Mapping):
            rows.append(
                f"<dt>{e(str(d.get('decision', '')))}</dt><dd>Because: {e(str(d.get('reason', '')))}</dd>"
            )
        else:
            rows.append(f"<dt>{e(decision_text(d))}</dt>")
    return f'<dl class="decisions">{"".join(rows)}</dl>'


def record_sections(record: Mapping[str, Any]) -> str:
    """The readable sections of a loaded session (summary, plan, decisions with reasons, todos,
    files, errors, tried), each a card with its heading."""
    out = []
    for field, title in SECTIONS:
        value = record.get(field)
        if field == "summary":
            inner = _none(value) or f'<p class="text">{e(str(value))}</p>'
        elif field == "plan":
            inner = _items(value or [], ordered=True)
        elif field == "decisions":
            inner = _decisions(value or [])
        elif field == "files":
            inner = _items(value or [], code=True)
        else:
            inner = _items(value or [])
        out.append(
            f'<section class="card" aria-labelledby="s-{field}">'
            f'<h2 id="s-{field}">{title}</h2>{inner}</section>'
        )
    return "".join(out)


def session(chrome: Chrome, loaded: Mapping[str, Any]) -> bytes:
    name = str(loaded["name"])
    version, latest = loaded["version"], loaded.get("latest_version", loaded["version"])
    facts = [
        f"<strong>{e(loaded.get('repo') or NO_REPO)}</strong>",
        f"version {e(str(version))} of {e(str(latest))}",
    ]
    facts.append(f"saved {when(loaded.get('saved_at'))}")
    if loaded.get("client"):
        facts.append(f"by <strong>{e(loaded['client'])}</strong>")
    for anchor in ("branch", "commit"):
        if loaded.get(anchor):
            facts.append(f"{anchor} <code>{e(str(loaded[anchor]))}</code>")
    links = "".join(
        f'<li><a href="{e(chrome.url("/web/session", name=name, version=v))}"'
        f"{_current(v == version)}>version {e(str(v))}</a></li>"
        for v in loaded.get("versions") or []
    )
    compare = chrome.url("/web/versions", name=name)
    content = (
        f'<p class="meta">{" · ".join(facts)}</p>'
        f"<p>Handoff: {handoff_badge(loaded.get('handoff'))}</p>"
        f'<nav aria-label="Versions" class="versions"><h2>Versions</h2><ul>{links}</ul>'
        f'<p><a href="{e(compare)}">Compare two versions</a></p></nav>'
        f"{record_sections(loaded)}"
    )
    return page(chrome, name, content)


def _version_options(versions: Sequence[int], chosen: int) -> str:
    return "".join(
        f'<option value="{v}"{" selected" if v == chosen else ""}>version {v}</option>' for v in versions
    )


def _diff_section(diff: SectionDiff) -> str:
    if not diff.lines:
        body = '<p class="none">Empty in both.</p>'
    elif not diff.changed:
        body = '<p class="none">No changes.</p>'
    else:
        items = []
        for op, text in diff.lines:
            if op == "+":
                items.append(
                    f'<li class="add"><span class="sr-only">Added: </span><ins>+ {e(text)}</ins></li>'
                )
            elif op == "-":
                items.append(
                    f'<li class="del"><span class="sr-only">Removed: </span><del>- {e(text)}</del></li>'
                )
            else:
                items.append(f"<li>  {e(text)}</li>")
        body = f'<ul class="diff">{"".join(items)}</ul>'
    return f"<section><h3>{e(diff.title)}</h3>{body}</section>"


def versions(
    chrome: Chrome,
    name: str,
    entries: Sequence[Mapping[str, Any]],
    a: int,
    b: int,
    diffs: Sequence[SectionDiff],
) -> bytes:
    numbers = [int(v["version"]) for v in entries]
    rows = "".join(
        f'<tr><td><a href="{e(chrome.url("/web/session", name=name, version=v["version"]))}">'
        f"version {e(str(v['version']))}</a></td>"
        f"<td>{when(v.get('saved_at'))}</td><td>{e(str(v.get('record', {}).get('client') or ''))}</td>"
        f"<td>{handoff_badge(v.get('handoff'))}</td></tr>"
        for v in reversed(entries)
    )
    table = (
        '<table><caption>Versions kept</caption><thead><tr><th scope="col">Version</th>'
        '<th scope="col">Saved</th>'
        f'<th scope="col">Client</th><th scope="col">Handoff</th></tr></thead><tbody>{rows}</tbody></table>'
    )
    form = (
        f'<form method="get" action="{e(chrome.url("/web/versions"))}" class="search panel">'
        f'<input type="hidden" name="name" value="{e(name)}">'
        f'<label for="a">From</label><select id="a" name="a">{_version_options(numbers, a)}</select>'
        f'<label for="b">To</label><select id="b" name="b">{_version_options(numbers, b)}</select>'
        '<button type="submit">Compare</button></form>'
    )
    changes = "".join(_diff_section(d) for d in diffs)
    content = (
        f'<p><a href="{e(chrome.url("/web/session", name=name))}">Back to the session</a></p>{table}{form}'
        '<section class="card" aria-labelledby="changes">'
        f'<h2 id="changes">Changes from version {a} to version {b}</h2>'
        f"{changes}</section>"
    )
    return page(chrome, f"{name}: versions", content)


# --- handoffs, activity, keys -------------------------------------------------------------------


def handoffs(chrome: Chrome, offers: Sequence[Mapping[str, Any]]) -> bytes:
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
    return page(chrome, "Handoffs", content)


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


def _scopes(scopes: Iterable[str]) -> str:
    return ", ".join(e(s) for s in scopes)


def keys(
    chrome: Chrome,
    listed: Sequence[Mapping[str, Any]],
    *,
    can_revoke: bool,
    have: Iterable[str],
    revoked: str,
) -> bytes:
    done = (
        f'<p class="notice" role="status">Key <code>{e(revoked)}</code> was revoked.</p>' if revoked else ""
    )
    note = (
        "<p>Revoking a key stops every client using it at once, and the OAuth tokens made from it.</p>"
        if can_revoke
        else "<p>Revoking a key needs the <code>delete</code> scope; the key you signed in with has "
        f"{_scopes(have)}. Sign in with a key that has it, or use <code>sessionvault key revoke</code>.</p>"
    )
    rows = []
    for k in listed:
        prefix = str(k["prefix"])
        state = (
            f'<span class="revoked">revoked</span> {when(k["revoked_at"])}'
            if k.get("revoked_at")
            else '<span class="active">active</span>'
        )
        if k.get("current"):
            state += " <strong>(you are signed in with it)</strong>"
        action = ""
        if can_revoke and not k.get("revoked_at"):
            action = (
                f'<form method="post" action="{e(chrome.url("/web/keys/revoke"))}">'
                f'<input type="hidden" name="csrf" value="{e(chrome.csrf)}">'
                f'<input type="hidden" name="key" value="{e(str(k["id"]))}">'
                '<input type="hidden" name="step" value="confirm">'
                f'<button type="submit" class="secondary" aria-label="Revoke key {e(prefix)}">'
                "Revoke…</button></form>"
            )
        rows.append(
            f'<tr><td><code class="nowrap">{e(prefix)}</code></td>'
            f"<td>{e(k.get('label') or '')}</td>"
            f"<td>{_scopes(k.get('scopes') or [])}</td><td>{when(k.get('created_at'))}</td>"
            f"<td>{when(k.get('last_used_at'))}</td><td>{state}</td><td>{action}</td></tr>"
        )
    table = (
        '<table><caption class="sr-only">Your API keys</caption><thead><tr><th scope="col">Key</th>'
        '<th scope="col">Label</th><th scope="col">Scopes</th><th scope="col">Created</th>'
        '<th scope="col">Last used</th><th scope="col">State</th><th scope="col">Action</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return page(chrome, "Keys", done + note + table)


def confirm_revoke(chrome: Chrome, key: Mapping[str, Any]) -> bytes:
    prefix = str(key["prefix"])
    label = f" ({e(key['label'])})" if key.get("label") else ""
    yours = (
        '<p class="notice"><strong>This is the key you are signed in with:</strong>'
        " you will be signed out.</p>"
        if key.get("current")
        else ""
    )
    content = (
        f"<p>Revoke the key <code>{e(prefix)}</code>{label}, with scopes {_scopes(key.get('scopes') or [])}? "
        "Every client that uses it, and every OAuth token made from it, stops working at once. "
        "This cannot be undone: a revoked key never works again.</p>"
        f"{yours}"
        f'<form method="post" action="{e(chrome.url("/web/keys/revoke"))}" class="panel">'
        f'<input type="hidden" name="csrf" value="{e(chrome.csrf)}">'
        f'<input type="hidden" name="key" value="{e(str(key["id"]))}">'
        '<input type="hidden" name="step" value="revoke">'
        f'<button type="submit" class="danger">Revoke {e(prefix)}</button> '
        f'<a href="{e(chrome.url("/web/keys"))}">Cancel</a></form>'
    )
    return page(chrome, "Revoke this key?", content)
