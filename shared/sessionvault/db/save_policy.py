"""How a save treats what is already there (`db.saves.save`'s `Policy`): the history to keep,
the quota, the data key it sealed with, an offer to make, a checkpoint's pruning."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Offer:
    """A saved version offered as a handoff: to any client (to_client '') or one named client,
    open for `ttl_days`."""

    from_client: str
    to_client: str
    ttl_days: int
    # In a workspace (migration 0013): who offered it, and the one member it is for (None: any).
    from_user: str | None = None
    to_user: str | None = None


@dataclass(frozen=True)
class Checkpoint:
    """An automatic checkpoint's save: keep the newest `keep` of names starting `prefix` in
    the same repo, and none of the user's older than `max_age_days`."""

    prefix: str
    keep: int
    max_age_days: int
    max_total: int = 100  # the user's live checkpoints across repos and clients: their own quota


@dataclass(frozen=True)
class Quota:
    sessions: int
    bytes: int


# A user's usage row appears on their first save (counted from what they stored before, for
# users older than migration 0003); from then on saves and deletes keep it up to date. Only
# in the user's own tenant: under a riding admission that did not admit (no tenant), it does
# nothing rather than fail RLS, so the transaction commits and the admission's answer stands.


UNLIMITED = Quota(sessions=2**31 - 1, bytes=2**62)


@dataclass(frozen=True)
class Policy:
    """How a save treats what is there: history depth, quota, the data key it sealed with
    (`dek_fp`), an offer to make, a checkpoint's pruning, and the content digest that lets a
    save of unchanged content add no version (`digest`, without an offer)."""

    keep_previous: int
    quota: Quota = UNLIMITED
    dek_fp: bytes = b""
    offer: Offer | None = None
    digest: bytes | None = None
    checkpoint: Checkpoint | None = None
