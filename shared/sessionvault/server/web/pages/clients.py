"""The clients page: per client (as each called itself when it saved), its last automatic
checkpoint, its last save and its last handoff, then a picture of the handoffs between clients
(and people, in a workspace) over the last 30 days. Whether a client's hooks fired is known only
on the laptop that runs them; the server can show when its last checkpoint arrived, and the page
says so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sessionvault.server.web.pages.charts import flow
from sessionvault.server.web.pages.layout import Chrome, e, page, row, table, when

COLUMNS = ("Client", "Last checkpoint", "Last save", "Last handoff")

WINDOW = timedelta(days=30)
UNKNOWN = "(unnamed client)"


@dataclass
class Client:
    name: str
    checkpoint: str = ""  # the newest automatic checkpoint's time (ISO), '' if none
    saved: str = ""  # the newest save of any kind
    handoff: str = ""  # the newest handoff it offered or accepted
    handoff_what: str = ""  # "offered" or "accepted"


def moment(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def sender(offer: Mapping[str, Any], senders: Mapping[tuple[str, int], str]) -> str:
    """Who offered: the person (a workspace offer), else the client that saved the offered version."""
    if offer.get("offered_by"):
        return f"person: {offer['offered_by']}"
    return senders.get((str(offer.get("name")), int(offer.get("version") or 0))) or UNKNOWN


def receiver(offer: Mapping[str, Any]) -> str | None:
    """Who took it: the client that accepted, else the person or client it waits for; None when
    an offer to anyone was never taken (no arrow to draw)."""
    if offer.get("state") == "accepted":
        return str(offer.get("accepted_by") or UNKNOWN)
    if offer.get("to_person"):
        return f"person: {offer['to_person']}"
    return str(offer["to_client"]) if offer.get("to_client") else None


def edges(
    offers: Sequence[Mapping[str, Any]], senders: Mapping[tuple[str, int], str], now: datetime
) -> dict[tuple[str, str], int]:
    """(from, to) -> how many handoffs offered in the 30 days before `now` went that way."""
    out: dict[tuple[str, str], int] = {}
    for offer in offers:
        at = moment(offer.get("offered_at"))
        to = receiver(offer)
        if at is None or to is None or now - at > WINDOW:
            continue
        pair = (sender(offer, senders), to)
        out[pair] = out.get(pair, 0) + 1
    return out


def summarize(
    sessions: Sequence[Mapping[str, Any]],
    offers: Sequence[Mapping[str, Any]],
    senders: Mapping[tuple[str, int], str],
) -> list[Client]:
    """One `Client` per name seen in the sessions or the handoffs, most recently active first."""
    seen: dict[str, Client] = {}

    def of(name: str) -> Client:
        return seen.setdefault(name, Client(name))

    for s in sessions:
        name = str(s.get("name", ""))
        client = name.split("/")[1] if s.get("automatic") and name.count("/") >= 2 else s.get("client")
        if not client:
            continue
        c, at = of(str(client)), str(s.get("updated_at") or "")
        c.saved = max(c.saved, at)
        if s.get("automatic"):
            c.checkpoint = max(c.checkpoint, at)
    for o in offers:
        ends = [(sender(o, senders), str(o.get("offered_at") or ""), "offered")]
        if o.get("state") == "accepted" and o.get("accepted_by"):
            ends.append((str(o["accepted_by"]), str(o.get("accepted_at") or ""), "accepted"))
        for name, at, what in ends:
            if name != UNKNOWN and not name.startswith("person: ") and at > of(name).handoff:
                of(name).handoff, of(name).handoff_what = at, what
    return sorted(seen.values(), key=lambda c: max(c.checkpoint, c.saved, c.handoff), reverse=True)


def clients(
    chrome: Chrome,
    sessions: Sequence[Mapping[str, Any]],
    offers: Sequence[Mapping[str, Any]],
    senders: Mapping[tuple[str, int], str],
    now: datetime,
) -> bytes:
    intro = (
        "<p>Each client as it named itself when it saved. Whether a client's hooks fired is known only on "
        "the computer that runs them, not here: the <strong>last checkpoint</strong> column is when the "
        "server last received an automatic checkpoint from that client, so a client whose hooks stopped "
        "shows an old time or none.</p>"
    )
    rows = summarize(sessions, offers, senders)
    if rows:
        cells = (
            row(
                COLUMNS,
                f"<strong>{e(c.name)}</strong>",
                when(c.checkpoint),
                when(c.saved),
                f"{when(c.handoff)}{f' ({e(c.handoff_what)})' if c.handoff else ''}",
            )
            for c in rows
        )
        summary = table("Clients", COLUMNS, cells)
    else:
        summary = '<p class="none">No client has saved a session yet.</p>'
    pairs = edges(offers, senders, now)
    picture = flow(pairs, "Handoffs between clients over the last 30 days")
    if picture:
        listed = "".join(
            f"<li>{e(a)} → {e(b)}: {n}</li>" for (a, b), n in sorted(pairs.items(), key=lambda p: -p[1])
        )
        shown = f'<figure class="chart">{picture}<figcaption><ul>{listed}</ul></figcaption></figure>'
    else:
        shown = '<p class="none">No handoffs taken or addressed in the last 30 days.</p>'
    flow_part = (
        '<section aria-labelledby="flow"><h2 id="flow">Handoffs in the last 30 days</h2>'
        "<p>An arrow goes from the client (or person) that offered a handoff to the one that accepted "
        "it (or, while open, the one it was addressed to); its number counts the handoffs.</p>"
        f"{shown}</section>"
    )
    return page(chrome, "Clients", intro + summary + flow_part)
