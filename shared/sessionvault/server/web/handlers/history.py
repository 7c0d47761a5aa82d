"""The handlers of the account's history pages, each a list of rows read for the signed-in user:
GET /web/handoffs (the open offers to them across their spaces, then every offer of their
personal space, newest first, with its state as the tools report it) and GET /web/activity (the
most recent audit rows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.types import Send

from sessionvault.server.web.call import Call, run
from sessionvault.server.web.gate import Gate
from sessionvault.server.web.pages.activity import activity
from sessionvault.server.web.pages.handoffs import handoffs as offers_page
from sessionvault.server.web.pages.layout import Chrome
from sessionvault.server.web.pages.spaces import offers_to_you
from sessionvault.server.web.responses import send_page
from sessionvault.service import account_view, workspace_view
from sessionvault.service.principal import Principal

OFFERS = 200
ACTIVITY_ROWS = 100

Rows = list[dict[str, Any]]


async def handoffs_page(gate: Gate, call: Call, send: Send) -> None:
    signed = await gate.required(call, send, "handoffs")
    if signed is None:
        return
    who, key_hash = signed.who, signed.session.key_hash
    to_you = await run(lambda: workspace_view.offers_to_me(gate.rt.db, key_hash))
    rows = await run(lambda: account_view.offers(gate.rt.db, who, limit=OFFERS))
    await send_page(send, offers_page(signed.chrome, rows, to_you=offers_to_you(signed.chrome, to_you)))


async def activity_page(gate: Gate, call: Call, send: Send) -> None:
    await _rows_page(
        gate,
        call,
        send,
        "activity",
        lambda user: account_view.activity(gate.rt.db, user, ACTIVITY_ROWS),
        activity,
    )


async def _rows_page(
    gate: Gate,
    call: Call,
    send: Send,
    current: str,
    read: Callable[[Principal], Rows],
    render: Callable[[Chrome, Rows], bytes],
) -> None:
    """The signed-in user's rows, read off the event loop, as the page `render` makes of them."""
    signed = await gate.required(call, send, current)
    if signed is None:
        return
    who = signed.who
    rows = await run(lambda: read(who))
    await send_page(send, render(signed.chrome, rows))
