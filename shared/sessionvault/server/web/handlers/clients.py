"""The clients page's handler (GET /web/clients): the personal space's newest sessions (their
client and time, automatic checkpoints among them) and its handoffs; for the handoffs of the
last 30 days, the client that saved each offered version, read from that session's kept
versions (as the versions page reads them), at most TRACED sessions so a busy account's page
stays one bounded read."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

from starlette.types import Send

from sessionvault.core import records
from sessionvault.server.web.call import Call, run
from sessionvault.server.web.gate import Gate
from sessionvault.server.web.pages import clients
from sessionvault.server.web.responses import send_page
from sessionvault.service import account_view, workspace_view

SESSIONS = 100  # the newest sessions the per-client times come from
OFFERS = 200
TRACED = 20  # sessions whose versions are read to name who offered each handoff


async def clients_page(gate: Gate, call: Call, send: Send) -> None:
    signed = await gate.required(call, send, "clients")
    if signed is None:
        return
    who = signed.who
    listed = await run(lambda: gate.rt.vault.list(who, records.ListArgs(limit=SESSIONS)))
    offered = await run(lambda: account_view.offers(gate.rt.db, who, limit=OFFERS))
    now = datetime.now(UTC)
    recent = [
        o for o in offered if (at := clients.moment(o.get("offered_at"))) and now - at <= clients.WINDOW
    ]
    senders: dict[tuple[str, int], str] = {}
    for name in list(dict.fromkeys(str(o["name"]) for o in recent))[:TRACED]:
        line = await run(partial(workspace_view.session_versions, gate.rt.vault, who, name, ""))
        for v in line["versions"]:
            senders[(name, int(v["version"]))] = str(v["record"].get("client") or "")
    body = clients.clients(signed.chrome, listed["sessions"], offered, senders, now)
    await send_page(send, body)
