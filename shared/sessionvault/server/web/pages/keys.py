"""The keys page and its confirmations: the account's API keys (prefix, label, scopes, when made
and last used, active or revoked, which one this sign-in uses), a Revoke button on each active
key and a form to make a key for a sign-in with the delete scope, the pages that ask before a
key is revoked or made, and the page that shows a new key, once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sessionvault.server.web.pages.layout import Chrome, e, page, row, table, when

COLUMNS = ("Key", "Label", "Scopes", "Created", "Last used", "State", "Action")


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
            row(
                COLUMNS,
                f'<code class="nowrap">{e(prefix)}</code>',
                e(k.get("label") or ""),
                _scopes(k.get("scopes") or []),
                when(k.get("created_at")),
                when(k.get("last_used_at")),
                state,
                action,
            )
        )
    form = _create_form(chrome, have) if can_revoke else ""
    return page(chrome, "Keys", done + note + table("Your API keys", COLUMNS, rows) + form)


def _create_form(chrome: Chrome, have: Iterable[str]) -> str:
    """Make a key: a label and the scopes (those of the key signed in with), then a confirmation."""
    boxes = "".join(
        f'<label><input type="checkbox" name="scope_{e(s)}" value="on"'
        f"{' checked' if s in ('read', 'write') else ''}> {e(s)}</label> "
        for s in have
    )
    return (
        '<section aria-labelledby="new-key"><h2 id="new-key">Make a key</h2>'
        f'<form method="post" action="{e(chrome.url("/web/keys/create"))}" class="panel">'
        f'<input type="hidden" name="csrf" value="{e(chrome.csrf)}">'
        '<input type="hidden" name="step" value="confirm">'
        '<label for="label">Label (what it is for)</label>'
        '<input type="text" id="label" name="label" maxlength="200">'
        f"<fieldset><legend>Scopes</legend>{boxes}</fieldset>"
        '<button type="submit">Make a key…</button></form>'
        "<p>A key may have only the scopes of the key you signed in with. It is shown once.</p></section>"
    )


def _hidden(chrome: Chrome, label: str, scopes: Sequence[str], step: str) -> str:
    fields = "".join(f'<input type="hidden" name="scope_{e(s)}" value="on">' for s in scopes)
    return (
        f'<input type="hidden" name="csrf" value="{e(chrome.csrf)}">'
        f'<input type="hidden" name="label" value="{e(label)}">{fields}'
        f'<input type="hidden" name="step" value="{e(step)}">'
    )


def confirm_create(chrome: Chrome, label: str, scopes: Sequence[str]) -> bytes:
    named = f" labelled <strong>{e(label)}</strong>" if label else ""
    content = (
        f"<p>Make a key{named} with scopes {_scopes(scopes)}? It works at once, for every client "
        "you give it to, until you revoke it. The key is shown once, on the next page: copy it "
        "then.</p>"
        f'<form method="post" action="{e(chrome.url("/web/keys/create"))}" class="panel">'
        f"{_hidden(chrome, label, scopes, 'create')}"
        '<button type="submit">Make the key</button> '
        f'<a href="{e(chrome.url("/web/keys"))}">Cancel</a></form>'
    )
    return page(chrome, "Make this key?", content)


def created(chrome: Chrome, key: str, label: str, scopes: Sequence[str]) -> bytes:
    named = f" ({e(label)})" if label else ""
    content = (
        f'<p class="notice" role="status">A new key{named} with scopes {_scopes(scopes)}. '
        "Copy it now: it is not shown again, and it is not stored anywhere it could be read back "
        "(only its SHA-256 is).</p>"
        f'<p><code class="key">{e(key)}</code></p>'
        "<p>Give it to a client with <code>sessionvault connect &lt;client&gt; --key …</code>, or set "
        "<code>SESSIONVAULT_API_KEY</code> where the client starts.</p>"
        f'<p><a href="{e(chrome.url("/web/keys"))}">Back to your keys</a></p>'
    )
    return page(chrome, "Your new key", content)


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
