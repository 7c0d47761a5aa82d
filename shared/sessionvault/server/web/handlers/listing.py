"""The list page's handler (GET /): the newest sessions, grouped by repository (or one
repository's, a page at a time), or, with search words, the vault's search; when no embedding
provider answers, the recent sessions whose name or preview holds every word, and a notice
saying so. In the personal space, or in `workspace` (one the person belongs to), with the
switcher between their spaces above."""

from __future__ import annotations

from typing import Any

from starlette.types import Send

from sessionvault.core import records
from sessionvault.errors import ProviderUnavailable
from sessionvault.server.web.call import Call, run
from sessionvault.server.web.gate import Gate
from sessionvault.server.web.pages import listing
from sessionvault.server.web.pages.layout import link
from sessionvault.server.web.pages.spaces import switcher
from sessionvault.server.web.responses import send_page
from sessionvault.service import workspace_view
from sessionvault.service.principal import Principal

LISTED = 100  # sessions a page lists (older ones: the next page)
SEARCHED = 20
NO_SEMANTIC = (
    "Semantic search is unavailable on this server (no embedding provider answered): showing the "
    "recent sessions whose name or preview contains your words."
)
WORDS_ONLY = (
    "Semantic search is unavailable on this server (no embedding provider answered): these sessions "
    "match your words."
)


async def home(gate: Gate, call: Call, send: Send) -> None:
    signed = await gate.required(call, send, "sessions")
    if signed is None:
        return
    q, repo, cursor, ws = (
        call.query.get("q", "").strip(),
        call.query.get("repo", ""),
        call.query.get("cursor", ""),
        call.query.get("workspace", ""),
    )
    asked = {"repo": repo, "limit": LISTED, "cursor": cursor, "workspace": ws}
    listed = await run(lambda: gate.rt.vault.list(signed.who, records.parse(records.ListArgs, asked)))
    shown: list[dict[str, Any]] = listed["sessions"]
    canonical = records.parse(records.ListArgs, {"repo": repo}).repo
    every = shown
    if canonical or cursor:  # the repo choices come from the newest sessions of every repo
        recent = records.ListArgs(limit=LISTED, workspace=ws)
        newest = await run(lambda: gate.rt.vault.list(signed.who, recent))
        every = newest["sessions"]
    repos = list(dict.fromkeys(s["repo"] for s in every))
    spaces = await run(lambda: workspace_view.spaces(gate.rt.vault.spaces, signed.who))
    form = switcher(signed.chrome, spaces, ws) + listing.search_form(signed.chrome, q, canonical, repos, ws)
    if q:
        hits, notice = await _search(gate, signed.who, q, canonical, shown, ws)
        body = listing.search_results(signed.chrome, q, hits, form=form, notice=notice, workspace=ws)
    else:
        groups: dict[str, list[dict[str, Any]]] = {}
        for s in shown:
            groups.setdefault(s["repo"], []).append(s)
        following = listed["next_cursor"]
        older = link(call.root, "/", repo=canonical, cursor=following, workspace=ws) if following else ""
        body = listing.sessions(
            signed.chrome, list(groups.items()), form=form, repo=canonical, older=older, workspace=ws
        )
    await send_page(send, body)


async def _search(
    gate: Gate, who: Principal, q: str, repo: str, recent: list[dict[str, Any]], workspace: str
) -> tuple[list[dict[str, Any]], str]:
    asked = {"query": q, "repo": repo, "max_results": SEARCHED, "workspace": workspace}
    args = records.parse(records.SearchArgs, asked)
    try:
        found = await run(lambda: gate.rt.vault.search(who, args))
    except ProviderUnavailable:
        words = q.lower().split()
        hits = [s for s in recent if all(w in f"{s['name']} {s.get('preview', '')}".lower() for w in words)]
        return hits[:SEARCHED], NO_SEMANTIC
    results: list[dict[str, Any]] = found["results"]
    return results, WORDS_ONLY if "notice" in found else ""
