"""The keys page's handlers: GET /web/keys lists the account's keys; POST /web/keys/revoke asks
first (step=confirm, which changes nothing) and then revokes (step=revoke). Revoking needs the
delete scope, since it cannot be undone (docs/web.md), and the form's CSRF token; revoking the
key signed in with ends this sign-in too."""

from __future__ import annotations

from starlette.types import Send

from sessionvault.core import apikeys
from sessionvault.core.apikeys import scope_hint
from sessionvault.errors import NotFound, ScopeMissing, ValidationFailed, VaultError
from sessionvault.server.web import params
from sessionvault.server.web.call import Call, run
from sessionvault.server.web.gate import Gate
from sessionvault.server.web.pages import keys
from sessionvault.server.web.pages.layout import link
from sessionvault.server.web.responses import redirect, send_page
from sessionvault.service import account_view

REVOKE_SCOPE = "delete"  # revoking a key cannot be undone, like a delete: docs/web.md
GONE = "no such active key of yours: it may have been revoked already"


async def keys_page(gate: Gate, call: Call, send: Send) -> None:
    signed = await gate.required(call, send, "keys")
    if signed is None:
        return
    listed = await run(lambda: account_view.keys(gate.rt.db, signed.session.key_hash))
    revoked = call.query.get("revoked", "")
    shown = revoked if revoked.startswith(apikeys.PREFIX) and len(revoked) == apikeys.PREFIX_CHARS else ""
    can = REVOKE_SCOPE in signed.who.scopes
    body = keys.keys(signed.chrome, listed, can_revoke=can, have=sorted(signed.who.scopes), revoked=shown)
    await send_page(call, send, body)


async def revoke(gate: Gate, call: Call, send: Send) -> None:
    step = call.form.get("step", "")
    if step == "confirm":
        call.log.tool = "web/keys.confirm"  # showing the question changes nothing
    signed = await gate.required(call, send, "keys")
    if signed is None:
        return
    if (refused := gate.csrf_refused(call, signed)) is not None:
        raise refused
    if REVOKE_SCOPE not in signed.who.scopes:
        raise _scope(signed.who.scopes)
    key_id = params.key_id(call.form.get("key", ""))
    listed = await run(lambda: account_view.keys(gate.rt.db, signed.session.key_hash))
    target = next((k for k in listed if str(k["id"]) == key_id and not k["revoked_at"]), None)
    if target is None:
        raise NotFound(GONE)
    if step == "confirm":
        await send_page(call, send, keys.confirm_revoke(signed.chrome, target))
        return
    if step != "revoke":
        raise ValidationFailed("invalid form: step must be confirm or revoke")
    outcome = await run(lambda: account_view.revoke(gate.rt.db, signed.session.key_hash, key_id))
    if outcome == "scope":
        raise _scope(signed.who.scopes)
    if outcome != "revoked":
        raise NotFound(GONE)
    if target["current"]:
        text = f"You revoked {target['prefix']}, the key you were signed in with. Sign in with another key."
        await gate.signin_page(call, send, notice=text)
        return
    call.log.status = 303
    await redirect(send, link(call.root, "/web/keys", revoked=target["prefix"]))


def _scope(have: frozenset[str]) -> VaultError:
    return ScopeMissing(scope_hint(REVOKE_SCOPE, "revoking a key", have))
