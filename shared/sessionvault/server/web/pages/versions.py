"""The versions page: the versions a session keeps, a form choosing two of them, and the diff
between the two section by section (`web/diff.py`), each changed line spelled out as added or
removed for screen readers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessionvault.server.web.pages.layout import Chrome, e, handoff_badge, page, when
from sessionvault.server.web.pages.spaces import in_space
from sessionvault.server.web.sections import SectionDiff


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
    workspace: str = "",
) -> bytes:
    numbers = [int(v["version"]) for v in entries]

    def opened(version: object) -> str:
        return chrome.url("/web/session", name=name, version=version, workspace=workspace)

    rows = "".join(
        f'<tr><td><a href="{e(opened(v["version"]))}">'
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
        + (f'<input type="hidden" name="workspace" value="{e(workspace)}">' if workspace else "")
        + f'<label for="a">From</label><select id="a" name="a">{_version_options(numbers, a)}</select>'
        f'<label for="b">To</label><select id="b" name="b">{_version_options(numbers, b)}</select>'
        '<button type="submit">Compare</button></form>'
    )
    changes = "".join(_diff_section(d) for d in diffs)
    content = (
        f"{in_space(chrome, workspace)}"
        f'<p><a href="{e(opened(""))}">Back to the session</a></p>'
        f"{table}{form}"
        '<section class="card" aria-labelledby="changes">'
        f'<h2 id="changes">Changes from version {a} to version {b}</h2>'
        f"{changes}</section>"
    )
    return page(chrome, f"{name}: versions", content)
