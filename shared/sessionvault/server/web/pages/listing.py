"""The list page at `/`: the search form, the recent sessions grouped by repository (each with
its version, client, save time and handoff state, and a link to older ones), and the search
results that replace the groups when the form has words in it. Every link and form keeps the
space shown (`workspace`; a listed session of a workspace carries its name)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sessionvault.server.web.pages.layout import NO_REPO, Chrome, e, handoff_badge, page, row, table, when

SESSION_COLUMNS = ("Session", "Version", "Client", "Saved", "Handoff")
RESULT_COLUMNS = ("Session", "Repository", "Version", "Score")


def _session_rows(chrome: Chrome, sessions: Iterable[Mapping[str, Any]]) -> list[str]:
    rows = []
    for s in sessions:
        href = chrome.url("/web/session", name=s["name"], workspace=s.get("workspace", ""))
        preview = f'<span class="preview">{e(s["preview"])}</span>' if s.get("preview") else ""
        unverified = (
            ' <span class="muted">(listing not verified: open it)</span>' if s.get("unverified") else ""
        )
        rows.append(
            row(
                SESSION_COLUMNS,
                f'<a href="{e(href)}">{e(s["name"])}</a>{unverified}{preview}',
                e(str(s["version"])),
                e(s.get("client") or ""),
                when(s.get("updated_at")),
                _offered(s.get("handoff")),
            )
        )
    return rows


def _offered(offer: Mapping[str, Any] | None) -> str:
    """The handoff cell, naming the version offered: the row shows the latest version, and the
    offer may be of an older one ("v1 open" beside v2)."""
    if not offer or offer.get("version") is None:
        return handoff_badge(offer)
    return f"v{e(str(offer['version']))} {handoff_badge(offer)}"


def _score(hit: Mapping[str, Any]) -> str:
    return e(str(hit["score"])) if "score" in hit else '<span class="none">text match</span>'


def search_form(chrome: Chrome, q: str, repo: str, repos: Sequence[str], workspace: str = "") -> str:
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
        '<button type="submit">Search</button>'
        + (f'<input type="hidden" name="workspace" value="{e(workspace)}">' if workspace else "")
        + "</form>"
    )


def sessions(
    chrome: Chrome,
    groups: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    *,
    form: str,
    repo: str,
    older: str,
    workspace: str = "",
) -> bytes:
    parts = [form]
    if repo:
        parts.append(
            f"<p>Showing <strong>{e(repo)}</strong> only. "
            f'<a href="{e(chrome.url("/", workspace=workspace))}">All repositories</a></p>'
        )
    if not groups:
        parts.append(
            '<p class="none">No sessions saved yet. Save one from your AI client with save_session.</p>'
        )
    for n, (name, entries) in enumerate(groups, start=1):
        heading = e(name or NO_REPO)
        filtered = chrome.url("/", repo=name, workspace=workspace) if name else ""
        more = (
            f' <a href="{e(filtered)}" class="muted">only this repository</a>'
            if filtered and not repo
            else ""
        )
        parts.append(
            f'<section aria-labelledby="repo-{n}"><h2 id="repo-{n}">{heading}{more}</h2>'
            + table(f"Sessions in {heading}", SESSION_COLUMNS, _session_rows(chrome, entries))
            + "</section>"
        )
    if older:
        parts.append(f'<p><a href="{e(older)}">Older sessions</a></p>')
    return page(chrome, "Sessions", "".join(parts))


def search_results(
    chrome: Chrome, q: str, hits: Sequence[Mapping[str, Any]], *, form: str, notice: str, workspace: str = ""
) -> bytes:
    told = f'<p class="notice" role="status">{e(notice)}</p>' if notice else ""
    if not hits:
        body = '<p class="none">Nothing matched.</p>'
    else:
        rows = (
            row(
                RESULT_COLUMNS,
                f'<a href="{e(chrome.url("/web/session", name=h["name"], workspace=workspace))}">'
                f"{e(h['name'])}</a>"
                f'<span class="preview">{e(h.get("summary") or h.get("preview") or "")}</span>',
                e(h.get("repo") or NO_REPO),
                e(str(h.get("version", ""))),
                _score(h),
            )
            for h in hits
        )
        body = table(f"Results for “{e(q)}”", RESULT_COLUMNS, rows, shown=True)
    back = f'<p><a href="{e(chrome.url("/", workspace=workspace))}">All sessions</a></p>'
    return page(chrome, "Search", form + told + body + back)
