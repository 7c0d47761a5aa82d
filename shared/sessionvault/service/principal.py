"""Who is calling, as the admission established it: the one thing every service call is given.
Nothing a caller sends can change it; the tenant of every transaction comes from it, through
`at`, which also carries the call's riding admission down to the transaction it opens."""

from __future__ import annotations

from dataclasses import dataclass, field

from sessionvault.core.apikeys import SCOPES
from sessionvault.core.keys import WrappedKey
from sessionvault.db.pool import Entering, Opening, Tenant


@dataclass(frozen=True)
class Principal:
    """Who is calling, as established by the API key. Nothing a caller sends can change it."""

    user_id: str
    wrapped_dek: WrappedKey
    # What the key may do: read (load, list, search), write (save, claim a handoff), delete, and
    # the hooks' checkpoint. Internal callers (jobs, tests) act for the user with every scope;
    # the server passes the key's.
    scopes: frozenset[str] = frozenset(SCOPES)
    # Which credential this is, for the record of who claimed a handoff: the API key's display
    # prefix, or "oauth"; "" for internal callers.
    credential: str = ""
    # This call's admission, when it rides on the call's first transaction (db.admission.Ride):
    # set per call by the server, never remembered between calls.
    opening: Opening | None = field(default=None, compare=False, repr=False)
    # The database's proof of this caller (migration 0020), from the admission: the serving
    # role's transactions set it as their tenant. "" for internal callers on a job's role.
    proof: str = field(default="", compare=False, repr=False)

    def at(self, space: str = "", entry: Entering | None = None) -> Tenant:
        """A transaction of this call in `space` (default: the caller's own), entering it as
        `entry` says when it is a workspace."""
        return Tenant(space or self.user_id, self.opening, entry, self.proof or None)
