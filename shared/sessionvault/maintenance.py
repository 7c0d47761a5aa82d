"""Scheduled work: prune rate-limit and audit rows, re-embed sessions that have no vector.

RLS stays in force here too: each job walks the users (identity plane) and works inside one
tenant transaction per user. Every job is idempotent and safe to run twice at once."""

from __future__ import annotations

import logging
from typing import Any

from sessionvault import ratelimit
from sessionvault.keyprovider import WrappedKey
from sessionvault.runtime import Runtime
from sessionvault.vault import Principal, embedding_text, open_record

log = logging.getLogger(__name__)


def _users(rt: Runtime) -> list[dict[str, Any]]:
    with rt.db.identity() as conn:
        return conn.execute("SELECT id::text AS id, dek_wrapped, key_id FROM users ORDER BY id").fetchall()


def prune_rate_limits(rt: Runtime) -> dict[str, int]:
    return {"deleted": sum(ratelimit.prune(rt.db, u["id"]) for u in _users(rt))}


def prune_audit(rt: Runtime, retention_days: int) -> dict[str, int]:
    sql = (
        "DELETE FROM audit_events"
        " WHERE user_id IS NOT DISTINCT FROM %s AND at < now() - %s * interval '1 day'"
    )
    deleted = 0
    for user in _users(rt):
        with rt.db.tenant(user["id"]) as conn:
            deleted += conn.execute(sql, (user["id"], retention_days)).rowcount
    with rt.db.identity() as conn:  # failed authentications: no tenant, NULL user
        deleted += conn.execute(sql, (None, retention_days)).rowcount
    return {"deleted": deleted}


# A failed row backs off (10 min, 20, 40, ... at most a day) and is never given up: a provider
# outage delays rows, it does not park them. Rows that failed least come first, so a row the
# provider always refuses cannot take every batch. A save resets the back-off.
_STALE = """
SELECT s.id, s.name, s.version, v.nonce, v.ciphertext
FROM sessions s JOIN session_versions v ON v.session_id = s.id AND v.version = s.version
WHERE s.user_id = %s AND (s.embedding IS NULL OR s.embedding_model IS DISTINCT FROM %s)
  AND (s.embed_retry_at IS NULL OR s.embed_retry_at <= now())
ORDER BY s.embed_failures, s.updated_at DESC LIMIT %s
"""
# Only if nobody saved a newer version meanwhile: that save brought its own vector.
_SET = "UPDATE sessions SET embedding = %s, embedding_model = %s WHERE id = %s AND version = %s"
_FAILED = """
UPDATE sessions SET embed_failures = embed_failures + 1,
    embed_retry_at = now() + least(interval '1 day', interval '10 minutes' * 2 ^ least(embed_failures, 10))
WHERE id = %s AND version = %s
"""


def reembed(rt: Runtime, batch: int = 50) -> dict[str, int]:
    """Give up to `batch` sessions a vector from the current provider; the rest wait for the
    next run. A row that cannot be read or embedded stays as it was and is counted as failed;
    a user whose key cannot be unwrapped is skipped without using up the batch."""
    embedder, done, failed, skipped = rt.vault.embedder, 0, 0, 0
    if embedder.model == "none":
        return {"embedded": 0, "failed": 0, "skipped_users": 0}
    for user in _users(rt):
        if done + failed >= batch:
            break
        who = Principal(user["id"], WrappedKey.from_row(user))
        with rt.db.tenant(who.user_id) as conn:
            params = (who.user_id, embedder.model, batch - done - failed)
            rows = conn.execute(_STALE, params).fetchall()
        if not rows:
            continue
        try:
            dek = rt.keys.unwrap(who.user_id, who.wrapped_dek)
        except Exception as exc:
            _log_skip("re-embed skipped a user", who.user_id, exc)
            skipped += 1
            continue
        for row in rows:
            ok = _embed_row(rt, who.user_id, dek, row)
            done, failed = done + ok, failed + (not ok)
    return {"embedded": done, "failed": failed, "skipped_users": skipped}


def _embed_row(rt: Runtime, user_id: str, dek: bytes, row: dict[str, Any]) -> bool:
    from pgvector import Vector

    try:
        vector = rt.vault.embedder.embed(embedding_text(open_record(dek, user_id, row)))
    except Exception as exc:  # an unreadable row: count it, never let it stop the job
        _log_skip("re-embed could not read a session", user_id, exc)
        vector = None
    with rt.db.tenant(user_id) as conn:
        if vector is None:
            conn.execute(_FAILED, (row["id"], row["version"]))
            return False
        conn.execute(_SET, (Vector(vector), rt.vault.embedder.model, row["id"], row["version"]))
    return True


def _log_skip(message: str, user_id: str, exc: Exception) -> None:
    log.error(message, extra={"user_id": user_id, "error_type": type(exc).__name__})


def run(rt: Runtime, task: str, retention_days: int = 90) -> dict[str, Any]:
    if task == "prune_rate_limits":
        return prune_rate_limits(rt)
    if task == "prune_audit":
        return prune_audit(rt, retention_days)
    if task == "reembed":
        return reembed(rt)
    raise ValueError(f"unknown task {task!r}: prune_rate_limits, prune_audit or reembed")
