"""Deleting sessions: one by name, or every one (of a repo), giving the user's quota back in
the same statement; and counting what deleting every one would remove (`core/purge.py`)."""

from __future__ import annotations

from sessionvault.db.pool import Database
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


def delete(db: Database, user_id: str, name: str) -> int | None:
    """Delete a session and its history; the number of versions removed, or None if absent."""
    row = tenant_row(db, user_id, _DELETE % "name = %(name)s", {"user_id": user_id, "name": name})
    return row["versions"] if row and row["sessions"] else None


def delete_all(db: Database, user_id: str, repo: str) -> tuple[int, int]:
    """Delete every session (of `repo`, when given): (sessions, versions) removed."""
    row = tenant_row(
        db, user_id, _DELETE % "(%(repo)s = '' OR repo = %(repo)s)", {"user_id": user_id, "repo": repo}
    )
    return (row["sessions"], row["versions"]) if row else (0, 0)


_COUNT = (
    "SELECT count(*) AS n FROM sessions WHERE user_id = %(user_id)s AND (%(repo)s = '' OR repo = %(repo)s)"
)


def count(db: Database, user_id: str, repo: str) -> int:
    row = tenant_row(db, user_id, _COUNT, {"user_id": user_id, "repo": repo})
    return int(row["n"]) if row else 0
