"""Who is calling, as the admission established it: the one thing every service call is given.
Nothing a caller sends can change it; the tenant of every transaction comes from it."""

from __future__ import annotations

from dataclasses import dataclass

from sessionvault.core.apikeys import SCOPES
from sessionvault.core.keys import WrappedKey


@dataclass(frozen=True)
class Principal:
    """Who is calling, as established by the API key. Nothing a caller sends can change it."""

    user_id: str
    wrapped_dek: WrappedKey
    # What the key may do: read (load, list, search), write (save, claim a handoff), delete.
    # Internal callers (jobs, tests) act for the user with every scope; the server passes the key's.
    scopes: frozenset[str] = frozenset(SCOPES)
    # Which credential this is, for the record of who claimed a handoff: the API key's display
    # prefix, or "oauth"; "" for internal callers.
    credential: str = ""
