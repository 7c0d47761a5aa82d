"""Claiming a handoff: the newest open offer for a repo, taken by exactly one caller in one
statement (the offers themselves are written with the save, in `sessions`)."""

from __future__ import annotations

from sessionvault.db.pool import Connection, Cursor, Database, Tenant
from sessionvault.db.sessions import RECORD_COLUMNS, STATE_COLUMNS, Row
from sessionvault.db.workspaces import ELSEWHERE

# The offer a handoff to `client` may claim: open, not expired, for anyone or for `client`.
_CLAIMABLE = """
    h.user_id = %(user_id)s AND (%(repo)s = '' OR h.repo = %(repo)s)
    AND (h.to_client = '' OR h.to_client = %(client)s)
    AND (h.to_user IS NULL OR h.to_user = %(actor)s::uuid)"""

# The claim: the newest open offer, taken by one UPDATE. Concurrent claims of the same row
# queue on its lock; each re-checks `accepted_at IS NULL` once the winner commits and finds
# nothing, so exactly one caller gets it. The record comes back in the same statement.
_CLAIM = (
    """
WITH pick AS (
    SELECT h.session_id, h.version FROM handoffs h
    WHERE"""
    + _CLAIMABLE
    + """
      AND h.accepted_at IS NULL AND h.superseded_at IS NULL AND h.expires_at > clock_timestamp()
      -- the newest across the caller's spaces wins: not this one if a workspace's is newer
      AND h.offered_at > coalesce((SELECT e.offered_at FROM sessionvault_newest_offer_elsewhere(
              %(repo)s, %(client)s) e), '-infinity')
    ORDER BY h.offered_at DESC LIMIT 1
),
claimed AS (
    UPDATE handoffs h SET accepted_at = clock_timestamp(), accepted_by = %(client)s,
                          accepted_with = %(credential)s, accepted_user = %(actor)s::uuid
    FROM pick
    WHERE h.session_id = pick.session_id AND h.version = pick.version
      AND h.accepted_at IS NULL AND h.superseded_at IS NULL AND h.expires_at > clock_timestamp()
    RETURNING h.*
)
SELECT"""
    + RECORD_COLUMNS
    + """
FROM claimed h
JOIN sessions s ON s.id = h.session_id
JOIN session_versions v ON v.session_id = h.session_id AND v.version = h.version
"""
)
# For a claim that got nothing: the newest offer this caller could have claimed, whatever
# its state now (read after the claim, in the same flight: it sees a winner's commit); failing
# that, the newest open one offered to another client, so the answer can say so.
_LAST_OFFER = (
    """
SELECT s.name,"""
    + STATE_COLUMNS
    + """
FROM handoffs h JOIN sessions s ON s.id = h.session_id
WHERE h.user_id = %(user_id)s AND (%(repo)s = '' OR h.repo = %(repo)s)
  AND (h.to_client = '' OR h.to_client = %(client)s
       OR (h.accepted_at IS NULL AND h.superseded_at IS NULL AND h.expires_at > clock_timestamp()))
ORDER BY (h.to_client = '' OR h.to_client = %(client)s) DESC, h.offered_at DESC LIMIT 1
"""
)


def claim(
    db: Database, at: Tenant, repo: str, client: str, credential: str = "", actor: str | None = None
) -> tuple[Row | None, Row | None, Row | None]:
    """Claim the newest open handoff of `repo` ('' = any) in space `user_id` that `client` and
    the person `actor` (default: the space's own person) may take, unless one of the caller's
    workspaces holds a newer one: (the claimed version's row, as `get_by_name` returns it, or
    None; the newest offer they could see, to say who took it or that it expired; that newer
    offer elsewhere, `workspaces.ELSEWHERE`'s row, or None). One statement claims, one flight."""
    user_id = at.space
    params = {
        "user_id": user_id,
        "repo": repo,
        "client": client,
        "credential": credential,
        "actor": actor or user_id,
    }

    def work(conn: Connection) -> tuple[Cursor, Cursor, Cursor]:
        return (
            conn.execute(_CLAIM, params),
            conn.execute(_LAST_OFFER, params),
            conn.execute(ELSEWHERE, (repo, client)),
        )

    # Not idempotent: a rerun after COMMIT would find the offer taken, by this very caller.
    won, last, elsewhere = db.in_tenant(at, work, idempotent=False)
    return won.fetchone(), last.fetchone(), elsewhere.fetchone()


# Offers, newest first, with their state (the HTTP API's handoff list; the web view's).
_OFFERS = (
    """
SELECT s.name, s.repo, h.offered_at,"""
    + STATE_COLUMNS
    + """
FROM handoffs h JOIN sessions s ON s.id = h.session_id
WHERE h.user_id = %(user_id)s AND (%(repo)s = '' OR h.repo = %(repo)s)
ORDER BY h.offered_at DESC LIMIT %(limit)s
"""
)


def offers(db: Database, at: Tenant, repo: str, limit: int) -> list[Row]:
    """The newest `limit` offers (of `repo`, '' = every repo), whatever their state."""
    user_id = at.space
    params = {"user_id": user_id, "repo": repo, "limit": limit}
    return list(db.in_tenant(at, lambda conn: conn.execute(_OFFERS, params), idempotent=True))
