"""Deleting sessions: one by name, or every one (of a repo), giving the user's quota back in
the same statement; and counting what deleting every one would remove (`service/purge.py`)."""

from __future__ import annotations

from datetime import datetime

from sessionvault.db.pool import Database, Tenant
from sessionvault.db.sessions import tenant_row

# The statement's snapshot predates the cascade, so the join still sees the versions it
# removes; the usage row gives back what they took (automatic checkpoints were never counted
# as sessions: core/checkpoints.py). %s: a fixed filter on `sessions`.
_DELETE = """
WITH gone AS (DELETE FROM sessions WHERE user_id = %%(user_id)s AND %s RETURNING id, name),
freed AS (
    SELECT count(DISTINCT gone.id) AS sessions, count(v.version) AS versions,
           count(DISTINCT gone.id) FILTER (WHERE gone.name NOT LIKE 'auto/%%%%') AS counted,
           coalesce(sum(octet_length(v.nonce) + octet_length(v.ciphertext)), 0) AS bytes
    FROM gone LEFT JOIN session_versions v ON v.session_id = gone.id
),
counted AS (
    UPDATE user_usage SET sessions = greatest(sessions - (SELECT counted FROM freed), 0),
                          bytes = greatest(bytes - (SELECT bytes FROM freed), 0)
    WHERE user_id = %%(user_id)s
)
SELECT sessions, versions FROM freed
"""


def delete(db: Database, at: Tenant, name: str) -> int | None:
    """Delete a session and its history; the number of versions removed, or None if absent."""
    user_id = at.space
    row = tenant_row(db, at, _DELETE % "name = %(name)s", {"user_id": user_id, "name": name})
    return row["versions"] if row and row["sessions"] else None


# The sessions (of a repo) that existed at `issued`: what a confirmation token counted.
_EXISTED = "(%(repo)s = '' OR repo = %(repo)s) AND created_at <= %(issued)s"
# ... deleted only if they are still exactly the `expected` number (one statement, one snapshot):
# a token replayed after its use, or after some of them went, deletes nothing.
_STILL_COUNTED = (
    _EXISTED
    + " AND (SELECT count(*) FROM sessions WHERE user_id = %(user_id)s AND "
    + _EXISTED
    + ") = %(expected)s"
)


def delete_all(
    db: Database, at: Tenant, repo: str, issued: datetime, expected: int
) -> tuple[int, int] | None:
    """Delete the sessions (of `repo`, when given) that existed at `issued`, if they are still
    `expected` in number: (sessions, versions) removed; None when they are not (nothing deleted)."""
    user_id = at.space
    params = {"user_id": user_id, "repo": repo, "issued": issued, "expected": expected}
    row = tenant_row(db, at, _DELETE % _STILL_COUNTED, params)
    if row is None or (expected and not row["sessions"]):
        return None
    return row["sessions"], row["versions"]


_COUNT = (
    "SELECT count(*) AS n, clock_timestamp() AS at FROM sessions"
    " WHERE user_id = %(user_id)s AND (%(repo)s = '' OR repo = %(repo)s)"
)


def count(db: Database, at: Tenant, repo: str) -> tuple[int, datetime]:
    """How many sessions (of `repo`) there are, and the database's time of that count."""
    user_id = at.space
    row = tenant_row(db, at, _COUNT, {"user_id": user_id, "repo": repo})
    assert row is not None  # an aggregate always has its row
    return int(row["n"]), row["at"]
