"""The session page's handler (GET /web/session?name=&version=&workspace=): one saved version,
loaded through the vault as load_session loads it (the latest when no version is named), in
the personal space or the workspace named; a session or version the caller does not have, or a
workspace they do not belong to, is a 404 page."""

from __future__ import annotations

from starlette.types import Send

from sessionvault.core import records
from sessionvault.errors import NotFound
from sessionvault.server.web import params
from sessionvault.server.web.call import Call, run
from sessionvault.server.web.gate import Gate
from sessionvault.server.web.pages import session
from sessionvault.server.web.responses import send_page


async def session_page(gate: Gate, call: Call, send: Send) -> None:
    signed = await gate.required(call, send, "sessions")
    if signed is None:
        return
    args = records.parse(
        records.LoadArgs,
        {
            "name": params.session_name(call.query),
            "version": params.number(call.query, "version", 0),
            "workspace": call.query.get("workspace", ""),
        },
    )
    loaded = await run(lambda: gate.rt.vault.load(signed.who, args))
    if not loaded.get("found"):
        raise NotFound(str(loaded.get("hint") or "not found"))
    await send_page(send, session.session(signed.chrome, loaded))
