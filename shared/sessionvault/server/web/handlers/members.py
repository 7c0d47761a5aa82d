"""The members page's handlers (docs/teams.md): GET /web/members?workspace= shows a workspace's
members to its owners; POST /web/members/change adds a person, changes a member's role or
removes one, asking first (step=confirm, which changes nothing) and then doing it
(step=apply). A change needs the form's CSRF token and a key with the delete scope; whether
the signed-in person owns the workspace is decided by the database from the key itself
(service/workspace_view.py), never from the form, which only names what to change."""

from __future__ import annotations

from typing import Any

from starlette.types import Send

from sessionvault.core import records
from sessionvault.errors import ValidationFailed
from sessionvault.server.web.call import Call, SignedIn, run
from sessionvault.server.web.gate import Gate
from sessionvault.server.web.pages import members as pages
from sessionvault.server.web.pages.layout import link
from sessionvault.server.web.responses import redirect, send_page
from sessionvault.service import workspace_view

DONE = {
    "add": "{person} was added as {role}.",
    "role": "{person} is now {role}.",
    "remove": "{person} was removed: their next call into {workspace} finds nothing.",
}


def workspace_named(values: dict[str, str]) -> str:
    """The workspace a query or form names, by the tools' rules; required here."""
    name: str = records.parse(records.ListArgs, {"workspace": values.get("workspace", "")}).workspace
    if not name:
        raise ValidationFailed("invalid arguments: workspace: name the workspace")
    return name


async def members_page(gate: Gate, call: Call, send: Send) -> None:
    signed = await gate.required(call, send, "sessions")
    if signed is None:
        return
    workspace = workspace_named(call.query)
    rows = await _members(gate, signed, workspace)
    can, have = workspace_view.CHANGE_SCOPE in signed.who.scopes, sorted(signed.who.scopes)
    done = _done(call.query, workspace, rows)
    body = pages.members(signed.chrome, workspace, rows, can_change=can, have=have, done=done)
    await send_page(send, body)


async def change(gate: Gate, call: Call, send: Send) -> None:
    step = call.form.get("step", "")
    signed = await gate.posted(call, send, "sessions", "web/members.confirm")
    if signed is None:
        return
    form = call.form
    workspace = workspace_named(form)
    action, person, role = form.get("action", ""), form.get("person", "").strip(), form.get("role", "")
    workspace_view.check_change(action, person, role)
    if step not in ("confirm", "apply"):
        raise ValidationFailed("invalid form: step must be confirm or apply")
    rows = await _members(gate, signed, workspace)  # an owner's page, or the refusal it gets
    if workspace_view.CHANGE_SCOPE not in signed.who.scopes:
        raise workspace_view.scope_missing(signed.who)
    listed = next((m for m in rows if m["name"] == person), None)
    if action != "add" and listed is None:
        raise ValidationFailed(f"{person} is not a member of {workspace}")
    you = bool(listed and listed.get("you"))
    if step == "confirm":
        was = str(listed["role"]) if listed else ""
        page = pages.confirm(signed.chrome, workspace, action, person, role, was=was, you=you)
        await send_page(send, page)
        return
    key_hash, who = signed.session.key_hash, signed.who
    await run(lambda: workspace_view.change(gate.rt.db, who, key_hash, workspace, action, person, role))
    if you and (action == "remove" or role != "owner"):  # no longer an owner: nothing to show here
        await redirect(send, link(call.root, "/", workspace="" if action == "remove" else workspace))
        return
    await redirect(send, link(call.root, "/web/members", workspace=workspace, done=action, person=person))


async def _members(gate: Gate, signed: SignedIn, workspace: str) -> list[dict[str, Any]]:
    who, key_hash = signed.who, signed.session.key_hash
    rows: list[dict[str, Any]] = await run(
        lambda: workspace_view.members(gate.rt.db, gate.rt.vault.spaces, who, key_hash, workspace)
    )
    return rows


def _done(query: dict[str, str], workspace: str, rows: list[dict[str, Any]]) -> str:
    """The notice after a change, shown only where the members bear it out (a crafted link
    cannot make the page claim a change the list contradicts)."""
    action, person = query.get("done", ""), query.get("person", "")
    listed = next((m for m in rows if m["name"] == person), None)
    if action not in DONE or not person or (listed is None) != (action == "remove"):
        return ""
    return DONE[action].format(person=person, role=listed["role"] if listed else "", workspace=workspace)
