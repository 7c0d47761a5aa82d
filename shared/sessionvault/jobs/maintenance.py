"""Scheduled work: prune rate-limit and audit rows, re-embed sessions that have no vector,
seal the previews saved in plaintext before migration 0015, give the heads saved before
migration 0022 their keyed search terms.

RLS stays in force here too: each job walks the users (identity plane) and works inside one
tenant transaction per user. The prunes are the exception: the rate-limit and audit tables
are partitioned by time (migration 0017), and a prune drops whole expired partitions through
the owner's definer functions (`db.partitions`), which read no row. Every job is idempotent
and safe to run twice at once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sessionvault.core.keys import WrappedKey
from sessionvault.core.records import embedding_text
from sessionvault.db import backfill, identity, oauth, partitions, previews, terms, vectors
from sessionvault.db.pool import Tenant
from sessionvault.errors import ConfigError
from sessionvault.runtime import Runtime
from sessionvault.service import vector_index
from sessionvault.service.principal import Principal
from sessionvault.service.sealing import open_record, seal_preview, terms_of

log = logging.getLogger(__name__)


# The day window sums the last 24 one-hour slots: a counter is kept an hour past it.
RATE_KEEP = timedelta(days=1, hours=1)


def prune_rate_limits(rt: Runtime) -> dict[str, int]:
    return _prune(rt, (partitions.RATE_TABLE,), RATE_KEEP)


def prune_audit(rt: Runtime) -> dict[str, int]:
    """The audit trail, workspace entries and failed-authentication counters past the audit
    retention (a day's partition goes once all of it is older; auth_failures' once its month is)."""
    return _prune(rt, partitions.AUDIT_TABLES, timedelta(days=rt.settings.audit_retention_days))


def _prune(rt: Runtime, tables: tuple[str, ...], keep: timedelta) -> dict[str, int]:
    """`deleted` counts rows deleted one by one (the default partitions' strays),
    `rows_dropped` the dropped partitions' rows as the catalog last estimated them."""
    done = [partitions.prune(rt.db, table, keep) for table in tables]
    return {
        "deleted": sum(p.deleted for p in done),
        "partitions_created": sum(p.created for p in done),
        "partitions_dropped": partitions.drop_detached(rt.db),
        "rows_dropped": sum(p.detached_rows for p in done),
        "busy": sum(p.busy for p in done),
    }


def prune_oauth(rt: Runtime) -> dict[str, int]:
    """Expired authorization requests, codes and tokens, and registered clients nobody
    approved within a day: open registration cannot grow the database for long."""
    return oauth.prune(rt.db)


def reembed(rt: Runtime, batch: int = 50) -> dict[str, int]:
    """Give up to `batch` sessions a vector from the current provider; the rest wait for the
    next run. A row that cannot be read or embedded stays as it was and is counted as failed;
    a user whose key cannot be unwrapped is skipped without using up the batch."""
    embedder, done, failed, skipped = rt.vault.embedder, 0, 0, 0
    if embedder.model == "none":
        return {"embedded": 0, "failed": 0, "skipped_users": 0}
    for user in identity.users(rt.db):
        if done + failed >= batch:
            break
        who = Principal(user["id"], WrappedKey.from_row(user))
        rows = backfill.stale(rt.db, who.user_id, embedder.model, batch - done - failed)
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
    embedder = rt.vault.embedder
    try:
        vector = embedder.embed(embedding_text(open_record(dek, user_id, row)))
    except Exception as exc:  # an unreadable row: count it, never let it stop the job
        _log_skip("re-embed could not read a session", user_id, exc)
        vector = None
    if vector is None:
        backfill.back_off(rt.db, user_id, row)
        return False
    sealed = vector_index.seal_vector(dek, user_id, row["binding"], embedder.model, vector)
    backfill.store_vector(rt.db, user_id, row, sealed, embedder.model)
    return True


def seal_vectors(rt: Runtime, batch: int = 1000) -> dict[str, int]:
    """Seal up to `batch` head vectors that heads saved before migration 0023 still hold in
    plaintext, under their tenant's data key, and empty the plaintext column; run it again until
    `sealed` is 0. A user whose key cannot be unwrapped is skipped and counted."""
    sealed = skipped = 0
    for user in identity.users(rt.db):
        if sealed >= batch:
            break
        with rt.db.tenant(user["id"]) as conn:
            rows = vectors.plaintext(conn, user["id"], batch - sealed)
        if not rows:
            continue
        dek = _unwrapped(rt, user, "sealing vectors")
        if dek is None:
            skipped += 1
            continue
        with rt.db.tenant(user["id"]) as conn:
            vectors.lock(conn, user["id"])
            for row in rows:
                model = row["embedding_model"]
                sealed_vector = vector_index.seal_vector(
                    dek, user["id"], row["binding"], model, row["plain_vector"]
                )
                vectors.store(conn, row, sealed_vector, model)
        sealed += len(rows)
    return {"sealed": sealed, "skipped_users": skipped}


def compact_vectors(rt: Runtime) -> dict[str, int]:
    """Fold every space's changed head vectors into new sealed segments (a search then opens a
    few segments and a small delta). A space with no change since its segments costs one query;
    a user whose key cannot be unwrapped is skipped and counted."""
    compacted = heads = skipped = 0
    for user in identity.users(rt.db):
        with rt.db.tenant(user["id"]) as conn:
            changed = vectors.changed_models(conn, user["id"])
        if not changed:
            continue
        dek = _unwrapped(rt, user, "compacting vectors")
        if dek is None:
            skipped += 1
            continue
        for model in changed:
            heads += vector_index.compact(rt.db, Tenant(user["id"]), dek, model)
            compacted += 1
    return {"compacted": compacted, "heads": heads, "skipped_users": skipped}


def seal_previews(rt: Runtime, batch: int = 1000) -> dict[str, int]:
    """Seal up to `batch` previews that heads saved before migration 0015 still hold in
    plaintext, under their tenant's data key, and empty the plaintext column; run it again
    until `sealed` is 0. The head's MAC covers the preview's text, so it needs no change, and a
    preview changed behind the server's back stays unverified once sealed. A user whose key
    cannot be unwrapped is skipped and counted; a user with nothing to seal costs one query."""
    sealed = skipped = 0
    for user in identity.users(rt.db):
        if sealed >= batch:
            break
        rows = previews.plaintext(rt.db, user["id"], batch - sealed)
        if not rows:
            continue
        dek = _unwrapped(rt, user, "sealing previews")
        if dek is None:
            skipped += 1
            continue
        blobs = [(row, seal_preview(dek, user["id"], row, row["preview"])) for row in rows]
        sealed += previews.store_sealed(rt.db, user["id"], blobs)
    return {"sealed": sealed, "skipped_users": skipped}


def index_terms(rt: Runtime, batch: int = 500) -> dict[str, int]:
    """Give up to `batch` heads saved before migration 0022 their search terms, keyed under their
    tenant's data key; run it again until `indexed` is 0 (a save indexes its own). A head that
    cannot be opened is counted as failed and tried again next run; a user whose key cannot be
    unwrapped is skipped and counted."""
    indexed = failed = skipped = 0
    for user in identity.users(rt.db):
        if indexed + failed >= batch:
            break
        rows = terms.unindexed(rt.db, user["id"], batch - indexed - failed)
        if not rows:
            continue
        dek = _unwrapped(rt, user, "indexing terms")
        if dek is None:
            skipped += 1
            continue
        opened = []
        for row in rows:
            try:
                opened.append((row, terms_of(dek, user["id"], open_record(dek, user["id"], row))))
            except Exception as exc:  # an unreadable row: count it, never let it stop the job
                _log_skip("indexing terms could not read a session", user["id"], exc)
                failed += 1
        indexed += terms.store(rt.db, user["id"], opened)
    return {"indexed": indexed, "failed": failed, "skipped_users": skipped}


def _unwrapped(rt: Runtime, user: dict[str, Any], doing: str) -> bytes | None:
    """The user's data key, or None (logged: a key that cannot be unwrapped skips its user,
    never stops the job)."""
    try:
        return rt.keys.unwrap(user["id"], WrappedKey.from_row(user))
    except Exception as exc:
        _log_skip(f"{doing} skipped a user", user["id"], exc)
        return None


def _log_skip(message: str, user_id: str, exc: Exception) -> None:
    log.error(message, extra={"user_id": user_id, "error_type": type(exc).__name__})


TASKS: dict[str, Callable[[Runtime], dict[str, int]]] = {
    "prune_rate_limits": prune_rate_limits,
    "prune_audit": prune_audit,
    "prune_oauth": prune_oauth,
    "reembed": reembed,
    "seal_previews": seal_previews,
    "index_terms": index_terms,
    "seal_vectors": seal_vectors,
    "compact_vectors": compact_vectors,
}


def run(rt: Runtime, task: str) -> dict[str, Any]:
    job = TASKS.get(task)
    if job is None:
        raise ConfigError(f"unknown task {task!r}: one of {', '.join(TASKS)}")
    return job(rt)
