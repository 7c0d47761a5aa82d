"""How a handoff looks to the tools: the state of an offer (open, accepted by whom and when,
expired, superseded), and why an accept got nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessionvault.core import offers
from sessionvault.core.records import LoadArgs
from sessionvault.db.sessions import iso
from sessionvault.errors import ValidationFailed


def state_of(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The offer on a row (`db.sessions.STATE_COLUMNS`) as the tools show it, or None."""
    state = row.get("handoff_state")
    if state is None:
        return None
    out: dict[str, Any] = {"state": state, "version": row["handoff_version"]}
    if row["handoff_to"]:
        out["to_client"] = row["handoff_to"]
    if row.get("handoff_from_person"):  # in a workspace: who offered it, and to whom
        out["offered_by"] = row["handoff_from_person"]
    if row.get("handoff_to_person"):
        out["to_person"] = row["handoff_to_person"]
    if state == "accepted":
        out["accepted_by"] = row["handoff_accepted_by"] or ""  # the name the claimer gave
        out["accepted_at"] = iso(row["handoff_accepted_at"])
        if row.get("handoff_accepted_with"):
            out["accepted_with"] = row["handoff_accepted_with"]  # the key (or OAuth) that claimed it
        if row.get("handoff_accepted_person"):  # in a workspace: the person who claimed it
            out["accepted_person"] = row["handoff_accepted_person"]
    elif state == "open":
        out["expires_at"] = iso(row["handoff_expires_at"])
    elif state == "expired":
        out["expired_at"] = iso(row["handoff_expires_at"])
    return out


def not_claimed(args: LoadArgs, last: Mapping[str, Any] | None) -> dict[str, Any]:
    """Why an accept got nothing: the newest offer it could have taken was accepted (by whom,
    when), expired, or there is none."""
    where = f"repo {args.repo!r}" if args.repo else "any repo"
    if last is None:
        return {"found": False, "hint": f"no handoff offered for {where}; load_session without accept looks"}
    offered = state_of(last) or {}
    target = offered.get("to_client", "")
    if target and target != args.client:  # someone else's: say so, but show nothing of it
        you = f"to {args.client}" if args.client else "to a caller that names no client"
        return {
            "found": False,
            "hint": f"the open handoff for {where} is offered to {target} only, not {you}",
        }
    out: dict[str, Any] = {"found": False, "name": last["name"], "handoff": offered}
    if offered.get("state") == "accepted":
        by = offers.claimer(offered)
        out["hint"] = f"the handoff for {where} was already accepted by {by} at {offered['accepted_at']}"
    else:
        out["hint"] = f"no open handoff for {where}: the newest one is {offered.get('state', 'gone')}"
    return out


def claimable_by(name: str, member: Mapping[str, Any] | None) -> str:
    """The id of `name`, the workspace member an offer is made to, when they could claim it; else
    ValidationFailed naming why (issue 37: an offer to a reader was saved and never claimable).
    A claim writes, so a reader cannot; a disabled person cannot call at all."""
    if member is None:
        raise ValidationFailed(f"to_person: no member named {name!r} in this workspace")
    if member["disabled"]:
        raise ValidationFailed(f"to_person: {name!r} is disabled on this server and could not claim it")
    if member["role"] == "reader":
        raise ValidationFailed(
            f"to_person: {name!r} is a reader of this workspace, and a reader cannot claim a handoff;"
            " offer it to a member or owner, or ask an owner to make them a member"
        )
    return str(member["id"])
