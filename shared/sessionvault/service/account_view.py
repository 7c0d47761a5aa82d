"""The account as its owner sees it beyond the sessions themselves: the handoffs it offered
(each with its state as the tools report it), its API keys, revoking one and making one (the
web view),
and its recent activity. The HTTP API and the web view read these here, never from `db`."""

from __future__ import annotations

from typing import Any

from sessionvault.core import apikeys
from sessionvault.db import handoffs
from sessionvault.db import web as store
from sessionvault.db.pool import Database
from sessionvault.db.web import Created, Revoked
from sessionvault.service import portability
from sessionvault.service.principal import Principal

Row = dict[str, Any]


def offers(db: Database, who: Principal, repo: str = "", state: str = "", limit: int = 50) -> list[Row]:
    """The newest `limit` offers (of `repo`, '' = every repo), as an export shows them; only
    those in `state` (open, accepted, expired, superseded) when it is given."""
    listed = [portability.offer_of(row) for row in handoffs.offers(db, who.at(), repo, limit)]
    return [offer for offer in listed if not state or offer["state"] == state]


def keys(db: Database, key_hash: bytes) -> list[Row]:
    """Every key of the holder of the live key `key_hash` (see `db.web.keys`)."""
    return store.keys(db, key_hash)


def revoke(db: Database, key_hash: bytes, key_id: str) -> Revoked:
    """Revoke `key_id` for the holder of `key_hash` (same user, delete scope: `db.web.revoke`)."""
    return store.revoke(db, key_hash, key_id)


def create_key(db: Database, key_hash: bytes, label: str, scopes: tuple[str, ...]) -> tuple[Created, str]:
    """A new key for the holder of `key_hash` (delete scope; at most its own scopes:
    `db.web.create_key`): the outcome and, when created, the key itself, to be shown once."""
    key = apikeys.generate()
    made = store.create_key(db, key_hash, apikeys.digest(key), apikeys.display_prefix(key), label, scopes)
    return made, key if made == "created" else ""


def activity(db: Database, who: Principal, limit: int) -> list[Row]:
    """The user's newest `limit` audit rows: when, which tool or page, the outcome."""
    return store.activity(db, who.at(), limit)
