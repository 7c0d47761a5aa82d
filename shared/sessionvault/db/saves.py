"""Saving a session: the head created or bumped and its new version stored, with the history
prune, the usage row, an offer and a checkpoint's pruning, in one tenant transaction that is
one flight (the version is sealed beforehand under its own `seal_id`, service/sealing.py)."""

from __future__ import annotations

from dataclasses import dataclass

from sessionvault.db.pool import Connection, Cursor, Database, Tenant
from sessionvault.db.save_policy import UNLIMITED as UNLIMITED
from sessionvault.db.save_policy import Checkpoint as Checkpoint
from sessionvault.db.save_policy import Offer as Offer
from sessionvault.db.save_policy import Policy as Policy
from sessionvault.db.save_policy import Quota as Quota
from sessionvault.db.sessions import Row, tenant_row


@dataclass(frozen=True)
class Head:
    """The plaintext columns of a session's head row."""

    name: str
    repo: str
    preview: str
    client: str
    sealed_vector: bytes | None  # its vector, sealed (service/vector_index.seal_vector); None: none
    model: str | None
    terms: tuple[tuple[bytes, int], ...] = ()  # keyed tokens and counts (service/sealing.terms_of)


@dataclass(frozen=True)
class Sealed:
    """A new version, sealed before the insert (service/sealing.py): its id, nonce, ciphertext,
    the MAC of the head's listed columns, and the head's preview sealed (the plaintext
    `preview` column is left empty: migration 0015)."""

    seal_id: str
    nonce: bytes
    ciphertext: bytes
    mac: bytes
    preview: bytes

    @property
    def size(self) -> int:
        return len(self.nonce) + len(self.ciphertext)


ENSURE_USAGE = """
INSERT INTO user_usage (user_id, sessions, bytes)
SELECT %(user_id)s,
       (SELECT count(*) FROM sessions WHERE user_id = %(user_id)s AND name NOT LIKE 'auto/%%'),
       (SELECT coalesce(sum(octet_length(nonce) + octet_length(ciphertext)), 0)
        FROM session_versions WHERE user_id = %(user_id)s)
WHERE NOT EXISTS (SELECT 1 FROM user_usage WHERE user_id = %(user_id)s)
  AND app_current_user_id() = %(user_id)s
ON CONFLICT (user_id) DO NOTHING
"""
# The head created or bumped and its new version stored, in one statement; nothing when the
# save would pass a quota, when the user's data key changed since `dek_fp` was read, (with
# `dedupe`) when the head already holds this very content, or when this version is stored
# already (a retry after a COMMIT whose answer was lost: the save is idempotent by seal_id).
# The usage row's lock serialises one user's saves, so two cannot both slip under the limit.
# Automatic checkpoints do not count toward the session quota but toward one of their own
# (core/checkpoints.py): a new one is refused when the user's live checkpoints, counted as its
# own slot's pruning will leave them, would pass `max_total`; pruning never reaches past the
# slot (a save must not be able to delete another client's or repo's checkpoints). The
# version's row may reference a head made by the same statement: foreign keys are checked at
# its end. What it wrote, it marks for the statements queued after it (`sessionvault.sealed`,
# local to the transaction).
_SAVE = """
WITH usage AS (SELECT sessions, bytes, dek_fp FROM user_usage WHERE user_id = %(user_id)s FOR UPDATE),
head AS (
    INSERT INTO sessions (user_id, name, repo, preview, sealed_preview, client, version, sealed_vector,
                          vector_seq, embedding_model, content_digest, meta_mac, seal_id, created_at,
                          updated_at)
    SELECT %(user_id)s, %(name)s, %(repo)s, '', %(sealed_preview)s, %(client)s, 1, %(sealed_vector)s,
           nextval('session_vector_seq'), %(model)s, %(digest)s, %(mac)s, %(seal_id)s, clock_timestamp(),
           clock_timestamp()
    FROM usage
    WHERE usage.bytes + %(size)s <= %(max_bytes)s
      AND (usage.dek_fp IS NULL OR usage.dek_fp = %(dek_fp)s)
      AND (usage.sessions < %(max_sessions)s OR %(automatic)s
           OR EXISTS (SELECT 1 FROM sessions WHERE user_id = %(user_id)s AND name = %(name)s))
      AND (NOT %(automatic)s
           OR EXISTS (SELECT 1 FROM sessions WHERE user_id = %(user_id)s AND name = %(name)s)
           OR (SELECT count(*) FILTER (WHERE NOT (repo = %(repo)s AND name LIKE %(prefix)s ESCAPE '\\'))
                      + least(count(*) FILTER (WHERE repo = %(repo)s AND name LIKE %(prefix)s ESCAPE '\\')
                              + 1, %(auto_keep)s)
               FROM sessions
               WHERE user_id = %(user_id)s AND name LIKE 'auto/%%'
                 AND updated_at >= clock_timestamp() - %(max_age_days)s * interval '1 day')
              <= %(max_total)s)
      AND NOT EXISTS (SELECT 1 FROM session_versions WHERE seal_id = %(seal_id)s)
    ON CONFLICT (user_id, name) DO UPDATE SET
        repo = EXCLUDED.repo, saved_repo = NULL, preview = EXCLUDED.preview,
        sealed_preview = EXCLUDED.sealed_preview, client = EXCLUDED.client,
        version = sessions.version + 1, embedding = NULL, sealed_vector = EXCLUDED.sealed_vector,
        vector_seq = EXCLUDED.vector_seq, embedding_model = EXCLUDED.embedding_model, embed_failures = 0,
        embed_retry_at = NULL,
        content_digest = EXCLUDED.content_digest, meta_mac = EXCLUDED.meta_mac,
        seal_id = EXCLUDED.seal_id, updated_at = clock_timestamp()
    WHERE NOT %(dedupe)s OR sessions.content_digest IS DISTINCT FROM EXCLUDED.content_digest
    RETURNING id, version, updated_at
),
stored AS (
    INSERT INTO session_versions (session_id, user_id, version, nonce, ciphertext, client, saved_at, seal_id)
    SELECT id, %(user_id)s, version, %(nonce)s, %(ciphertext)s, %(client)s, updated_at, %(seal_id)s
    FROM head
)
SELECT set_config('sessionvault.sealed', %(seal_id)s::text, true) FROM head
"""
# What the statements queued after the upsert act on: the head, if this transaction's upsert
# wrote it. Without it they change nothing.
_SAVED_HEAD = """
saved AS (
    SELECT id, version FROM sessions
    WHERE user_id = %(user_id)s AND name = %(name)s AND seal_id = %(seal_id)s
      AND current_setting('sessionvault.sealed', true) = %(seal_id)s::text
)"""
# The stored version: written now, or by an attempt whose COMMIT went through unacknowledged.
_SAVED_ROW = """
SELECT session_id AS id, version, saved_at AS updated_at FROM session_versions
WHERE user_id = %(user_id)s AND seal_id = %(seal_id)s
"""
# A deduplicated save that wrote nothing: the head that already holds this content, if any.
_UNCHANGED = """
SELECT id, version, updated_at FROM sessions
WHERE user_id = %(user_id)s AND name = %(name)s AND content_digest = %(digest)s
  AND seal_id IS DISTINCT FROM %(seal_id)s
"""
# A checkpoint save keeps only the newest `keep` checkpoints of its own repo and client, and
# none of the user's older than `max_age_days` (expired by age, whoever saved them: a save
# cannot choose which); what they took is given back to the usage row.
_PRUNE_CHECKPOINTS = (
    "WITH"
    + _SAVED_HEAD
    + """,
doomed AS (
    (SELECT id FROM sessions
     WHERE user_id = %(user_id)s AND repo = %(repo)s AND name LIKE 'auto/%%'
       AND name LIKE %(prefix)s ESCAPE '\\'
     ORDER BY updated_at DESC, id DESC OFFSET %(auto_keep)s)
    UNION
    SELECT id FROM sessions
    WHERE user_id = %(user_id)s AND name LIKE 'auto/%%'
      AND updated_at < clock_timestamp() - %(max_age_days)s * interval '1 day'
),
gone AS (
    DELETE FROM sessions WHERE id IN (SELECT id FROM doomed) AND EXISTS (SELECT 1 FROM saved)
    RETURNING id
),
freed AS (
    SELECT coalesce(sum(octet_length(v.nonce) + octet_length(v.ciphertext)), 0) AS bytes
    FROM gone JOIN session_versions v ON v.session_id = gone.id
)
UPDATE user_usage SET bytes = greatest(bytes - (SELECT bytes FROM freed), 0)
WHERE user_id = %(user_id)s AND EXISTS (SELECT 1 FROM saved)
"""
)
# Older versions beyond the history depth go; the usage row learns what was added and freed.
_PRUNE_AND_COUNT = (
    "WITH"
    + _SAVED_HEAD
    + """,
gone AS (
    DELETE FROM session_versions v USING saved
    WHERE v.session_id = saved.id AND v.version < saved.version - %(keep)s
    RETURNING octet_length(v.nonce) + octet_length(v.ciphertext) AS n
)
UPDATE user_usage
SET bytes = bytes + %(size)s - (SELECT coalesce(sum(n), 0) FROM gone),
    sessions = sessions + (SELECT count(*) FROM saved WHERE version = 1 AND NOT %(automatic)s)
WHERE user_id = %(user_id)s AND EXISTS (SELECT 1 FROM saved)
"""
)
# The saved version offered as a handoff: a newer offer for the same repo and target replaces
# the open one (superseded, not claimable).
_OFFER = (
    "WITH"
    + _SAVED_HEAD
    + """,
replaced AS (
    UPDATE handoffs SET superseded_at = clock_timestamp()
    WHERE user_id = %(user_id)s AND repo = %(repo)s AND to_client = %(to_client)s
      AND to_user IS NOT DISTINCT FROM %(to_user)s::uuid
      AND accepted_at IS NULL AND superseded_at IS NULL AND EXISTS (SELECT 1 FROM saved)
)
INSERT INTO handoffs (session_id, version, user_id, repo, from_client, to_client, offered_at, expires_at,
                      from_user, to_user)
SELECT saved.id, saved.version, %(user_id)s, %(repo)s, %(from_client)s, %(to_client)s,
       clock_timestamp(), clock_timestamp() + make_interval(days => %(ttl_days)s),
       %(from_user)s::uuid, %(to_user)s::uuid
FROM saved
"""
)
# The saved head's search terms replace its previous version's (keyed tokens: migration 0022).
_TERMS = (
    "WITH"
    + _SAVED_HEAD
    + """,
gone AS (DELETE FROM session_terms t USING saved WHERE t.session_id = saved.id),
marked AS (UPDATE sessions s SET terms_indexed = true FROM saved WHERE s.id = saved.id)
INSERT INTO session_terms (session_id, user_id, token, tf)
SELECT saved.id, %(user_id)s, t.token, t.tf
FROM saved, unnest(%(tokens)s::bytea[], %(tfs)s::smallint[]) AS t (token, tf)
"""
)
_USAGE = "SELECT sessions, bytes, dek_fp FROM user_usage WHERE user_id = %s"


def save(db: Database, at: Tenant, head: Head, version: Sealed, policy: Policy) -> Row | None:
    """Create the session or bump its version and store `version` as it, in one flight: the
    head row (id, version, updated_at), or None, with nothing written, when the save would pass
    the quota or the user's data key changed since `policy.dek_fp` was read. With an offer, the
    new version becomes an open handoff; with a digest and no offer, a head that already holds
    that content is left alone and comes back with "unchanged"; with a checkpoint, the save is
    an automatic one (no session quota; older siblings pruned). The head's row lock serialises
    concurrent saves of one name; clock_timestamp(), not now(): a save that waited for the lock
    is the newer one."""
    user_id = at.space
    quota, offer, checkpoint = policy.quota, policy.offer, policy.checkpoint
    params = {
        "user_id": user_id,
        "name": head.name,
        "repo": head.repo,
        "sealed_preview": version.preview,  # the plaintext column stays '' (migration 0015)
        "client": head.client,
        "sealed_vector": head.sealed_vector,
        "model": head.model if head.sealed_vector else None,
        "size": version.size,
        "max_bytes": quota.bytes,
        "max_sessions": quota.sessions,
        "dek_fp": policy.dek_fp,
        "digest": policy.digest,
        "dedupe": policy.digest is not None and offer is None,
        "automatic": checkpoint is not None,
        "seal_id": version.seal_id,
        "nonce": version.nonce,
        "ciphertext": version.ciphertext,
        "mac": version.mac,
        "keep": policy.keep_previous,
        # a checkpoint's slot and quota (unused by other saves, which the SQL lets through)
        "prefix": _like_prefix(checkpoint.prefix) if checkpoint else "",
        "auto_keep": checkpoint.keep if checkpoint else 0,
        "max_age_days": checkpoint.max_age_days if checkpoint else 0,
        "max_total": checkpoint.max_total if checkpoint else 0,
        "tokens": [token for token, _ in head.terms],
        "tfs": [tf for _, tf in head.terms],
    }

    def work(conn: Connection) -> tuple[Cursor, Cursor | None]:
        conn.execute(ENSURE_USAGE, {"user_id": user_id})
        conn.execute(_SAVE, params)
        saved = conn.execute(_SAVED_ROW, params)
        same = conn.execute(_UNCHANGED, params) if params["dedupe"] else None
        conn.execute(_PRUNE_AND_COUNT, params)
        conn.execute(_TERMS, params)
        if offer is not None:
            offered = {
                "from_client": offer.from_client,
                "to_client": offer.to_client,
                "ttl_days": offer.ttl_days,
                "from_user": offer.from_user,
                "to_user": offer.to_user,
            }
            conn.execute(_OFFER, {**params, **offered})
        if checkpoint is not None:
            conn.execute(_PRUNE_CHECKPOINTS, params)
        return saved, same

    # Idempotent: a second run finds the version stored by the first and writes nothing.
    saved, same = db.in_tenant(at, work, idempotent=True)
    row = saved.fetchone()
    if row is None and same is not None:
        unchanged = same.fetchone()
        return {**unchanged, "unchanged": True} if unchanged else None
    return row


def _like_prefix(text: str) -> str:
    """A LIKE pattern (ESCAPE '\\') for names starting with `text`, whatever it holds."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def usage(db: Database, at: Tenant) -> Row | None:
    """The user's stored sessions and bytes (None before their first save)."""
    user_id = at.space
    return tenant_row(db, at, _USAGE, (user_id,))
