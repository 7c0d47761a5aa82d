"""The members page of a workspace, for its owners (docs/teams.md): who belongs and with which
role, and, for a sign-in whose key has the delete scope, a form to add a person and on each
member a role change and a removal; and the page that asks before any of them is made."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sessionvault.server.web.pages.layout import Chrome, e, page, when

ROLES = ("owner", "member", "reader")
DOES = {
    "owner": "everything a member may, delete every session in it, and manage its members",
    "member": "read, save, delete a session, offer and claim handoffs",
    "reader": "read only (load, list, search)",
}


def _hidden(chrome: Chrome, workspace: str, action: str, person: str, step: str) -> str:
    fields = {"csrf": chrome.csrf, "workspace": workspace, "action": action, "person": person, "step": step}
    return "".join(
        f'<input type="hidden" name="{name}" value="{e(value)}">' for name, value in fields.items() if value
    )


def _roles(chosen: str, named: str) -> str:
    """The role choice; `named` is what labels it (an id a <label> points at, or an aria-label)."""
    options = "".join(f'<option value="{r}"{" selected" if r == chosen else ""}>{r}</option>' for r in ROLES)
    return f'<select name="role" {named}>{options}</select>'


def _row(chrome: Chrome, workspace: str, m: Mapping[str, Any], can_change: bool) -> str:
    name, role = str(m["name"]), str(m["role"])
    you = " <strong>(you)</strong>" if m.get("you") else ""
    actions = ""
    if can_change:
        action = e(chrome.url("/web/members/change"))
        new_role = _roles(role, f'aria-label="New role of {e(name)}"')
        actions = (
            f'<form method="post" action="{action}" class="inline">'
            f"{_hidden(chrome, workspace, 'role', name, 'confirm')}{new_role} "
            f'<button type="submit" class="secondary" aria-label="Change the role of {e(name)}">'
            "Change…</button></form> "
            f'<form method="post" action="{action}" class="inline">'
            f"{_hidden(chrome, workspace, 'remove', name, 'confirm')}"
            f'<button type="submit" class="secondary" aria-label="Remove {e(name)}">Remove…</button></form>'
        )
    return (
        f"<tr><td>{e(name)}{you}</td><td>{e(role)}</td><td>{when(m.get('added_at'))}</td>"
        f"<td>{actions}</td></tr>"
    )


def members(
    chrome: Chrome,
    workspace: str,
    rows: Sequence[Mapping[str, Any]],
    *,
    can_change: bool,
    have: Iterable[str],
    done: str,
) -> bytes:
    told = f'<p class="notice" role="status">{e(done)}</p>' if done else ""
    sessions = chrome.url("/", workspace=workspace)
    intro = (
        f"<p>Everyone who may use <strong>{e(workspace)}</strong>. "
        f'<a href="{e(sessions)}">Its sessions</a>.</p>'
        '<ul class="roles">' + "".join(f"<li><strong>{r}</strong>: {DOES[r]}</li>" for r in ROLES) + "</ul>"
    )
    if can_change:
        note = (
            "<p>A change takes effect on the person's next call. Someone removed keeps what they already"
            " read; they lose every further read, write and claim, and sight of the workspace.</p>"
        )
    else:
        scopes = ", ".join(e(s) for s in have)
        note = (
            "<p>Changing the members needs the <code>delete</code> scope; the key you signed in with has "
            f"{scopes}. Sign in with a key that has it, or use <code>sessionvault workspace</code>.</p>"
        )
    body = "".join(_row(chrome, workspace, m, can_change) for m in rows)
    table = (
        f'<table><caption class="sr-only">Members of {e(workspace)}</caption><thead><tr>'
        '<th scope="col">Person</th><th scope="col">Role</th><th scope="col">Added</th>'
        f'<th scope="col">Change</th></tr></thead><tbody>{body}</tbody></table>'
    )
    add = ""
    if can_change:
        add = (
            f'<form method="post" action="{e(chrome.url("/web/members/change"))}" class="search panel">'
            f"{_hidden(chrome, workspace, 'add', '', 'confirm')}"
            '<label for="person">User name</label>'
            '<input type="text" id="person" name="person" maxlength="200" required autocomplete="off">'
            '<label for="new-role">Role</label>'
            + _roles("member", 'id="new-role"')
            + '<button type="submit">Add…</button></form>'
        )
    return page(chrome, f"Members of {workspace}", told + intro + note + table + add)


def confirm(
    chrome: Chrome, workspace: str, action: str, person: str, role: str, *, was: str, you: bool
) -> bytes:
    """The question before a change: what it does, and a button that does it (or Cancel)."""
    ws, who, as_role = f"<strong>{e(workspace)}</strong>", e(person), f"<strong>{e(role)}</strong>"
    if action == "add":
        title = "Add this person?"
        said = f"Add <strong>{who}</strong> to {ws} as {as_role}: {DOES[role]}."
        said += " They can read what the workspace holds from their next call on."
        button = f"Add {who} as {e(role)}"
    elif action == "role":
        title = "Change this role?"
        said = f"Make <strong>{who}</strong> {as_role} of {ws} (now {e(was)}): {DOES[role]}."
        button = f"Make {who} {e(role)}"
    else:
        title = "Remove this person?"
        said = (
            f"Remove <strong>{who}</strong> ({e(was)}) from {ws}: their next call into it"
            " finds nothing, as for a workspace that does not exist. What they already read stays"
            " with them; what they saved there stays in the workspace."
        )
        button = f"Remove {who}"
    yours = (
        '<p class="notice"><strong>This is you:</strong> you will no longer manage this workspace.</p>'
        if you and not (action == "role" and role == "owner")
        else ""
    )
    role_field = f'<input type="hidden" name="role" value="{e(role)}">' if action != "remove" else ""
    content = (
        f"<p>{said}</p>{yours}"
        f'<form method="post" action="{e(chrome.url("/web/members/change"))}" class="panel">'
        f"{_hidden(chrome, workspace, action, person, 'apply')}{role_field}"
        f'<button type="submit" class="danger">{button}</button> '
        f'<a href="{e(chrome.url("/web/members", workspace=workspace))}">Cancel</a></form>'
    )
    return page(chrome, title, content)
