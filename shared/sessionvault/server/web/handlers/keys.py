"""The keys page's handlers: GET /web/keys lists the account's keys; POST /web/keys/revoke asks
first (step=confirm, which changes nothing) and then revokes (step=revoke); POST
/web/keys/create asks first too, then makes a key and shows it once. Both need the delete scope
(the scope that manages keys: a revoke cannot be undone, a new key outlives this sign-in;
docs/web.md) and the form's CSRF token; a new key has at most the scopes of the key signed in
with. Revoking the key signed in with ends this sign-in too."""

from __future__ import annotations

from starlette.types import Send

from sessionvault.core import apikeys
from sessionvault.core.apikeys import scope_hint
from sessionvault.errors import NotFound, QuotaExceeded, ScopeMissing, ValidationFailed, VaultError
from sessionvault.server.web import params
from sessionvault.server.web.call import Call, run
from sessionvault.server.web.gate import Gate
from sessionvault.server.web.pages import keys
from sessionvault.server.web.pages.layout import link
from sessionvault.server.web.responses import redirect, send_page
from sessionvault.service import account_view

REVOKE_SCOPE = "delete"  # revoking a key cannot be undone, like a delete: docs/web.md
GONE = "no such active key of yours: it may have been revoked already"
LABEL_CHARS = 200


async def keys_page(gate: Gate, call: Call, send: Send) -> None:
    signed = await gate.required(call, send, "keys")
    if signed is None:
        return
    listed = await run(lambda: account_view.keys(gate.rt.db, signed.session.key_hash))
    revoked = call.query.get("revoked", "")
    shown = revoked if revoked.startswith(apikeys.PREFIX) and len(revoked) == apikeys.PREFIX_CHARS else ""
    can = REVOKE_SCOPE in signed.who.scopes
    body = keys.keys(signed.chrome, listed, can_revoke=can, have=sorted(signed.who.scopes), revoked=shown)
    await send_page(send, body)


async def revoke(gate: Gate, call: Call, send: Send) -> None:
    step = call.form.get("step", "")
    signed = await gate.posted(call, send, "keys", "web/keys.confirm")
    if signed is None:
        return
    if REVOKE_SCOPE not in signed.who.scopes:
        raise _scope(signed.who.scopes)
    key_id = params.key_id(call.form.get("key", ""))
    listed = await run(lambda: account_view.keys(gate.rt.db, signed.session.key_hash))
    target = next((k for k in listed if str(k["id"]) == key_id and not k["revoked_at"]), None)
    if target is None:
        raise NotFound(GONE)
    if step == "confirm":
        await send_page(send, keys.confirm_revoke(signed.chrome, target))
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
    await redirect(send, link(call.root, "/web/keys", revoked=target["prefix"]))


async def create(gate: Gate, call: Call, send: Send) -> None:
    step = call.form.get("step", "")
    signed = await gate.posted(call, send, "keys", "web/keys.create.confirm")
    if signed is None:
        return
    have = signed.who.scopes
    if REVOKE_SCOPE not in have:
        raise _scope(have, "creating a key")
    label = call.form.get("label", "").strip()
    scopes = tuple(s for s in apikeys.SCOPES if call.form.get(f"scope_{s}"))
    if len(label) > LABEL_CHARS:
        raise ValidationFailed(f"a label has at most {LABEL_CHARS} characters")
    if not scopes:
        raise ValidationFailed("choose at least one scope for the new key")
    if not set(scopes) <= have:
        said = f"a new key can have only the scopes of the key you signed in with ({', '.join(sorted(have))})"
        raise ScopeMissing(said)
    if step == "confirm":
        await send_page(send, keys.confirm_create(signed.chrome, label, scopes))
        return
    if step != "create":
        raise ValidationFailed("invalid form: step must be confirm or create")
    made, key = await run(lambda: account_view.create_key(gate.rt.db, signed.session.key_hash, label, scopes))
    if made == "scope":
        raise _scope(have, "creating a key")
    if made == "too_many":
        raise QuotaExceeded("this account has 100 active keys: revoke some before making another")
    if made != "created":
        raise ValidationFailed("the key could not be made; sign in again and retry")
    await send_page(send, keys.created(signed.chrome, key, label, scopes))


def _scope(have: frozenset[str], doing: str = "revoking a key") -> VaultError:
    return ScopeMissing(scope_hint(REVOKE_SCOPE, doing, have))
