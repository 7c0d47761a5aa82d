"""The session page: one saved version as readable sections (summary, plan, decisions with
their reasons, todos, files, errors, tried), with its repository, client, branch and commit,
its handoff state, and links to its other versions and to the comparison page; in a workspace,
which one (and every link stays in it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessionvault.server.web.pages.layout import NO_REPO, Chrome, current, e, handoff_badge, page, when
from sessionvault.server.web.pages.spaces import in_space
from sessionvault.server.web.sections import SECTIONS, decision_text


def _none(items: Sequence[Any] | str | None) -> str | None:
    return '<p class="none">None recorded.</p>' if not items else None


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
    name, workspace = str(loaded["name"]), str(loaded.get("workspace") or "")
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
        f'<li><a href="{e(chrome.url("/web/session", name=name, version=v, workspace=workspace))}"'
        f"{current(v == version)}>version {e(str(v))}</a></li>"
        for v in loaded.get("versions") or []
    )
    compare = chrome.url("/web/versions", name=name, workspace=workspace)
    content = (
        f"{in_space(chrome, workspace)}"
        f'<p class="meta">{" · ".join(facts)}</p>'
        f"<p>Handoff: {handoff_badge(loaded.get('handoff'))}</p>"
        f'<nav aria-label="Versions" class="versions"><h2>Versions</h2><ul>{links}</ul>'
        f'<p><a href="{e(compare)}">Compare two versions</a></p></nav>'
        f"{record_sections(loaded)}"
    )
    return page(chrome, name, content)
