"""Handoffs across a person's spaces: "the latest" of a repo and a claim look at every space the
caller may take offers from (their own, and each workspace where they are an owner or member),
so an offer a teammate made reaches them whichever space it was made in, exactly once.

The personal space is asked first, in one flight that also names the newest open offer the
caller may claim elsewhere (`workspaces.ELSEWHERE`); only when that one is newer does a second
flight enter its workspace. A call that names a workspace stays in it."""

from __future__ import annotations

from typing import Any

from sessionvault.core.records import LoadArgs
from sessionvault.db import handoffs
from sessionvault.db import sessions as store
from sessionvault.db.pool import Database
from sessionvault.service.principal import Principal
from sessionvault.service.spaces import Space, Spaces

Row = dict[str, Any]
Found = tuple[Space, Row | None, Row | None]  # the space, the row found, the last offer seen


def claim(db: Database, spaces: Spaces, who: Principal, args: LoadArgs) -> Found:
    """Claim the newest open offer of `args.repo` the caller may take (in `args.workspace`, or
    across every space of theirs)."""
    space = spaces.of(who, args.workspace)

    def in_space(place: Space) -> tuple[Row | None, Row | None, Row | None]:
        with spaces.entered(who, place, "write", "load_session") as at:
            return handoffs.claim(db, at, args.repo, args.client, who.credential, actor=who.user_id)

    row, last, elsewhere = in_space(space)
    if row is None and elsewhere is not None and not args.workspace:
        space = spaces.of(who, elsewhere["name"])
        row, last, _ = in_space(space)
    return space, row, last


def latest(db: Database, spaces: Spaces, who: Principal, args: LoadArgs) -> Found:
    """The latest of `args.repo` for the caller's client: the newest open offer they may claim
    in any of their spaces, else the newest session of the space the call names."""
    space = spaces.of(who, args.workspace)

    def in_space(place: Space) -> tuple[Row | None, Row | None]:
        with spaces.entered(who, place, "read", "load_session") as at:
            return store.get_latest_for_repo(db, at, args.repo, args.client, actor=who.user_id)

    row, elsewhere = in_space(space)
    if elsewhere is not None and not args.workspace and _newer(elsewhere, row):
        space = spaces.of(who, elsewhere["name"])
        row, _ = in_space(space)
    return space, row, None


def _newer(offer: Row, row: Row | None) -> bool:
    """Whether the open offer `offer` elsewhere comes before `row` (the personal latest)."""
    if row is None or row.get("handoff_state") != "open":
        return True
    return bool(offer["offered_at"] > row["handoff_offered_at"])
