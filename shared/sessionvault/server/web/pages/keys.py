"""The keys page and its confirmation: the account's API keys (prefix, label, scopes, when made
and last used, active or revoked, which one this sign-in uses), a Revoke button on each active
key for a sign-in with the delete scope, and the page that asks before a key is revoked."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sessionvault.server.web.pages.layout import Chrome, e, page, when


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
