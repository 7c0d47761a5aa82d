"""Reading the tenant plane: a session's versions, a repo's latest, a page of heads. Every
function is one tenant transaction (`Database.in_tenant`, pipelined), so RLS scopes it and it
costs one flight to the database; saves are `db.saves`. The explicit user_id filters are there
for the indexes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sessionvault.db.pool import Connection, Cursor, Database, Tenant
from sessionvault.db.workspaces import ELSEWHERE, MINE

Row = dict[str, Any]


# A handoff's state as the tools show it; `h` is a handoffs row (or NULLs: no offer).
STATE_COLUMNS = """
    CASE WHEN h.session_id IS NULL THEN NULL
         WHEN h.accepted_at IS NOT NULL THEN 'accepted'
         WHEN h.superseded_at IS NOT NULL THEN 'superseded'
         WHEN h.expires_at <= clock_timestamp() THEN 'expired'
         ELSE 'open' END AS handoff_state,
    h.version AS handoff_version, h.to_client AS handoff_to, h.from_client AS handoff_from,
    h.offered_at AS handoff_offered_at,
    h.expires_at AS handoff_expires_at, h.accepted_at AS handoff_accepted_at,
    h.accepted_by AS handoff_accepted_by, h.accepted_with AS handoff_accepted_with,
    CASE WHEN h.from_user IS NULL THEN NULL ELSE sessionvault_member_name(h.from_user) END
        AS handoff_from_person,
    CASE WHEN h.to_user IS NULL THEN NULL ELSE sessionvault_member_name(h.to_user) END
        AS handoff_to_person,
    CASE WHEN h.accepted_user IS NULL OR h.accepted_user = h.user_id THEN NULL
         ELSE sessionvault_member_name(h.accepted_user) END AS handoff_accepted_person"""

# What a load returns, from sessions s, session_versions v and handoffs h: the one version's
# ciphertext, the head, the version list and the offer's state (a claim returns the same). In a
# workspace, each row returned is noted in its access trail (`noted`: sessionvault_note_read).
RECORD_COLUMNS = (
    """
    s.id, s.name, s.repo, s.version AS head, v.version, v.seal_id, v.nonce, v.ciphertext,
    sessionvault_note_read(s.user_id, s.id) AS noted,
    s.embedding_model, s.sealed_vector, s.embedding::real[] AS plain_vector,
    coalesce(s.seal_id::text, s.id::text || ':' || s.version) AS binding,
    ARRAY(SELECT version FROM session_versions WHERE session_id = s.id ORDER BY version DESC)
        AS versions,"""
    + STATE_COLUMNS
)

_LOAD = (
    "SELECT"
    + RECORD_COLUMNS
    + """
    FROM sessions s
    JOIN session_versions v ON v.session_id = s.id AND v.version = COALESCE(%(version)s, s.version)
    LEFT JOIN handoffs h ON h.session_id = v.session_id AND h.version = v.version
    WHERE s.user_id = %(user_id)s
"""
)


def get_by_name(db: Database, at: Tenant, name: str, version: int | None) -> Row | None:
    user_id = at.space
    sql = _LOAD + " AND s.name = %(name)s"
    return tenant_row(db, at, sql, {"user_id": user_id, "name": name, "version": version})


# "The latest" of a repo: the newest open offer `client` may claim (the version a claim would
# take), so a deliberate handoff is never hidden behind a newer automatic checkpoint; failing
# that, the newest head by time. Two candidates picked apart, never one sort key over both: a
# key that is NULL for sessions without an offer sorted them last, behind every old accepted one.
_LATEST = (
    """
WITH offer AS (
    SELECT h.session_id, h.version FROM handoffs h
    WHERE h.user_id = %(user_id)s AND (%(repo)s = '' OR h.repo = %(repo)s)
      AND (h.to_client = '' OR h.to_client = %(client)s)
      AND (h.to_user IS NULL OR h.to_user = %(actor)s::uuid)
      AND h.accepted_at IS NULL AND h.superseded_at IS NULL AND h.expires_at > clock_timestamp()
    ORDER BY h.offered_at DESC LIMIT 1
),
newest AS (
    SELECT s.id AS session_id, s.version FROM sessions s
    WHERE s.user_id = %(user_id)s AND (%(repo)s = '' OR s.repo = %(repo)s)
    ORDER BY s.updated_at DESC, s.id DESC LIMIT 1
),
pick AS (
    SELECT * FROM offer UNION ALL SELECT * FROM newest WHERE NOT EXISTS (SELECT 1 FROM offer)
)
SELECT"""
    + RECORD_COLUMNS
    + """
FROM pick
JOIN sessions s ON s.id = pick.session_id
JOIN session_versions v ON v.session_id = pick.session_id AND v.version = pick.version
LEFT JOIN handoffs h ON h.session_id = v.session_id AND h.version = v.version
"""
)


# Every kept version of one session, oldest first, each with its offer's state: an export.
_EVERY_VERSION = (
    "SELECT"
    + RECORD_COLUMNS
    + """
    FROM sessions s
    JOIN session_versions v ON v.session_id = s.id
    LEFT JOIN handoffs h ON h.session_id = v.session_id AND h.version = v.version
    WHERE s.user_id = %(user_id)s AND s.name = %(name)s
    ORDER BY v.version
"""
)


def every_version(db: Database, at: Tenant, name: str) -> list[Row]:
    """Every kept version of session `name` (oldest first) as `get_by_name` returns one."""
    user_id = at.space
    params = {"user_id": user_id, "name": name}
    return list(db.in_tenant(at, lambda conn: conn.execute(_EVERY_VERSION, params), idempotent=True))


_VERSIONS = """
SELECT ARRAY(SELECT version FROM session_versions WHERE session_id = s.id ORDER BY version DESC) AS versions
FROM sessions s WHERE s.user_id = %(user_id)s AND s.name = %(name)s
"""


def versions_of(db: Database, at: Tenant, name: str) -> list[int] | None:
    """The versions still kept of session `name`, newest first; None if there is no such session."""
    user_id = at.space
    row = tenant_row(db, at, _VERSIONS, {"user_id": user_id, "name": name})
    return list(row["versions"]) if row else None


def get_latest_for_repo(
    db: Database, at: Tenant, repo: str, client: str = "", actor: str | None = None
) -> tuple[Row | None, Row | None]:
    """The latest of `repo` ('' = any) in space `user_id` for `client` and the person `actor`
    (default: the space's own person): the newest open offer they may claim, else the newest
    session by time (see _LATEST); and, in the same flight, the newest open offer they may
    claim in one of their workspaces (`workspaces.ELSEWHERE`; none when `user_id` is one)."""
    user_id = at.space
    params = {"user_id": user_id, "repo": repo, "client": client, "actor": actor or user_id}

    def work(conn: Connection) -> tuple[Cursor, Cursor]:
        return conn.execute(_LATEST, params), conn.execute(ELSEWHERE, (repo, client))

    latest, elsewhere = db.in_tenant(at, work, idempotent=True)
    return latest.fetchone(), elsewhere.fetchone()


# Each session's newest offer (if any) rides along: list_sessions shows its state. The preview
# comes sealed (`sealed_preview`), or as plaintext from a head saved before migration 0015.
_PAGE = (
    """
SELECT s.id, s.name, s.repo, s.preview, s.sealed_preview, s.version, s.client, s.updated_at,
       s.meta_mac, s.seal_id, coalesce(s.saved_repo, s.repo) AS saved_repo,"""
    + STATE_COLUMNS
    + """
FROM sessions s
LEFT JOIN LATERAL (
    SELECT * FROM handoffs WHERE session_id = s.id ORDER BY version DESC LIMIT 1
) h ON true
WHERE s.user_id = %(user_id)s AND (%(repo)s = '' OR s.repo = %(repo)s)
  AND (%(before_at)s::timestamptz IS NULL OR (s.updated_at, s.id) < (%(before_at)s, %(before_id)s::uuid))
ORDER BY s.updated_at DESC, s.id DESC LIMIT %(limit)s
"""
)


def page(db: Database, at: Tenant, repo: str, limit: int, after: tuple[datetime, str] | None) -> list[Row]:
    """Newest first, keyset-paginated on (updated_at, id): a save between pages cannot make a
    page repeat rows. A session saved again meanwhile moves to the front, so this pass skips
    it and the next listing from the top shows it first."""
    params = _page_params(at, repo, limit, after)
    return db.in_tenant(at, lambda conn: conn.execute(_PAGE, params), idempotent=True).fetchall()


def _page_params(at: Tenant, repo: str, limit: int, after: tuple[datetime, str] | None) -> dict[str, Any]:
    before_at, before_id = after or (None, None)
    return {"user_id": at.space, "repo": repo, "limit": limit, "before_at": before_at, "before_id": before_id}


def page_and_spaces(
    db: Database, at: Tenant, repo: str, limit: int, after: tuple[datetime, str] | None
) -> tuple[list[Row], list[Row]]:
    """`page` of the caller's personal space, and in the same flight the workspaces the caller
    belongs to (id, name, role): what a model needs to name one."""
    params = _page_params(at, repo, limit, after)

    def work(conn: Connection) -> tuple[Cursor, Cursor]:
        return conn.execute(_PAGE, params), conn.execute(MINE)

    rows, spaces = db.in_tenant(at, work, idempotent=True)
    return rows.fetchall(), spaces.fetchall()


def iso(ts: datetime) -> str:
    return ts.isoformat(timespec="seconds")


def tenant_row(db: Database, at: Tenant, sql: str, params: dict[str, Any] | tuple[Any, ...]) -> Row | None:
    """One statement's first row. Reads, and delete: a repeated delete removes nothing more."""
    return db.in_tenant(at, lambda conn: conn.execute(sql, params), idempotent=True).fetchone()
