"""Which space a call works in: the caller's personal space, or a workspace they belong to
(docs/teams.md), and entering it for the call's transactions.

A workspace's name resolves to its id and wrapped data key once per instance and is then
remembered for a few minutes: that memory is no grant, and it follows the key: a call that
meets content its remembered key cannot open (or a save the database refuses because the key
changed) asks `renew` once for the key as stored now, so a re-key or rotation is seen on the
next call, never as a false integrity error. Every transaction of the call enters
the workspace in its own flight (`db.pool.Entering`), where the database checks membership
and role at that moment; a refusal forgets the name, and reads as "no such workspace" whether
the caller was never a member, was removed a moment ago, or the workspace does not exist."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sessionvault.core.keys import WrappedKey
from sessionvault.db import pool
from sessionvault.db import workspaces as store
from sessionvault.db.pool import Database, Tenant
from sessionvault.errors import WorkspaceBusy, WorkspaceDenied
from sessionvault.service.principal import Principal

REMEMBER_S = 300.0
MAX_REMEMBERED = 1024
# What each access needs, in words for a refusal.
VERBS = {"read": "read", "write": "write to", "own": "manage (owners only)"}


@dataclass(frozen=True)
class Space:
    """The tenant of a call's rows: the caller's own id, or a workspace's."""

    id: str
    wrapped: WrappedKey
    name: str = ""  # the workspace's name; "" = the caller's personal space

    @property
    def label(self) -> str:
        return self.name or "personal"


class Spaces:
    def __init__(self, db: Database, limits: tuple[int, int] = (0, 0)) -> None:
        self.db = db
        self.limits = limits  # a workspace's own budget: calls per minute, per day (0: none)
        self._known: dict[tuple[str, str], tuple[float, Space]] = {}
        self._lock = threading.Lock()

    def of(self, who: Principal, workspace: str) -> Space:
        """The space a call names: personal for "", else the caller's workspace of that name."""
        if not workspace:
            return Space(who.user_id, who.wrapped_dek)
        key = (who.user_id, workspace)
        with self._lock:
            known = self._known.get(key)
        if known is not None and known[0] > time.monotonic():
            return known[1]
        row = store.resolve(self.db, who.at(), workspace)
        if row is None:
            raise WorkspaceDenied(None, _no_such(workspace, "read"))
        space = Space(row["id"], WrappedKey.from_row(row), workspace)
        with self._lock:
            if len(self._known) >= MAX_REMEMBERED:
                self._known.clear()
            self._known[key] = (time.monotonic() + REMEMBER_S, space)
        return space

    def renew(self, who: Principal, space: Space) -> Space | None:
        """The workspace `space` as the database holds it now, remembered from here on, when its
        wrapped key is not the one `space` holds (a re-key or rotation since it was remembered);
        None for the personal space or an unchanged key (nothing to try again with)."""
        if not space.name:
            return None
        with self._lock:
            self._known.pop((who.user_id, space.name), None)
        fresh = self.of(who, space.name)
        return None if fresh.wrapped == space.wrapped else fresh

    @contextmanager
    def entered(self, who: Principal, space: Space, access: str, tool: str) -> Iterator[Tenant]:
        """The tenant of the call's transactions for `space`, entering it for `access` (read,
        write, own) when it is a workspace; a refusal inside forgets the name and says so."""
        if not space.name:
            yield who.at(space.id)
            return
        try:
            yield who.at(space.id, pool.Entering(who.user_id, space.id, access, tool, limits=self.limits))
        except WorkspaceDenied as exc:
            with self._lock:
                self._known.pop((who.user_id, space.name), None)
            raise WorkspaceDenied(exc.role, _no_such(space.name, access, exc.role)) from None
        except WorkspaceBusy as exc:
            said = (
                f"workspace {space.name!r} has used its {exc.window} budget of {exc.limit} calls, which its "
                f"members share (your own budget is apart): try again in {exc.retry_after_s} s"
            )
            raise WorkspaceBusy(exc.window, exc.limit, exc.retry_after_s, said) from None

    def mine(self, who: Principal) -> list[dict[str, str]]:
        """The workspaces the caller belongs to: name and role."""
        return [{"name": r["name"], "role": r["role"]} for r in store.mine(self.db, who.at())]


def _no_such(name: str, access: str, role: str | None = None) -> str:
    if role and role.startswith("denied:"):
        held = role.removeprefix("denied:")
        return f"your role in workspace {name!r} is {held}: it cannot {VERBS.get(access, access)} it"
    return f"no workspace named {name!r} that you belong to (list_sessions without a workspace names yours)"
