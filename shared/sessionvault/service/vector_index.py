"""Search by meaning over sealed vectors (issue 36, migration 0023): a space's segments opened
once per process and kept in a cache bounded by bytes (least recently used first; a warm
Lambda container keeps its own), brought up to date by the delta each search reads in its
flight, scored in memory; and compaction, which folds the delta into new segments.

Nothing here is in the clear at rest: the database holds each head's vector sealed on its row
and the segments sealed whole (core/vectors.py for the layout, core/crypto for the bindings)."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sessionvault.core import crypto, vectors
from sessionvault.db import vectors as stored
from sessionvault.db.pool import Connection, Database, Tenant
from sessionvault.db.search import Found

SEGMENT_ROWS = 4096  # heads a segment holds: 3 MB at 384 dimensions, 12 MB at 1536
DELTA_MAX = 2048  # past this many changed heads, the search that sees them compacts first
CACHE_BYTES = 256 * 1024 * 1024  # opened segments a process keeps (float32 in memory)


class SegmentCache:
    """Opened segments by (space, model, segment id), least recently used out past `max_bytes`.
    A segment never changes once written (a compaction writes new ones), so an entry is valid
    for as long as the space lists its id."""

    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._held: OrderedDict[tuple[str, str, str], vectors.Segment] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # the local server's worker threads share one

    def ids(self, space: str, model: str) -> list[str]:
        with self._lock:
            return [key[2] for key in self._held if key[:2] == (space, model)]

    def get(self, space: str, model: str, segment_id: str) -> vectors.Segment | None:
        with self._lock:
            found = self._held.get((space, model, segment_id))
            if found is not None:
                self._held.move_to_end((space, model, segment_id))
            return found

    def put(self, space: str, model: str, segment_id: str, segment: vectors.Segment) -> None:
        with self._lock:
            key = (space, model, segment_id)
            if key in self._held:
                return
            self._held[key] = segment
            self._bytes += segment.nbytes
            while self._bytes > self.max_bytes and len(self._held) > 1:
                _, dropped = self._held.popitem(last=False)
                self._bytes -= dropped.nbytes


@dataclass(frozen=True)
class Scored:
    """The heads closest in meaning (best first, id -> cosine), and every head's cosine that
    the search could compute (so a keyword hit can say how close in meaning it is too)."""

    best: list[tuple[str, float]]
    cosine: dict[str, float]


def open_vector(dek: bytes, space_id: str, model: str, row: dict[str, Any]) -> vectors.Matrix | None:
    """A head's vector from its row: sealed (`sealed_vector`, `binding`) or, saved before the
    move, plaintext (`plain_vector`)."""
    if row.get("sealed_vector") is not None:
        aad = crypto.vector_aad(space_id, row["binding"], model)
        return vectors.decode(crypto.open_blob(dek, bytes(row["sealed_vector"]), aad))
    if row.get("plain_vector") is not None:
        return vectors.unit(row["plain_vector"])
    return None


def seal_vector(dek: bytes, space_id: str, binding: str, model: str, vector: npt.ArrayLike) -> bytes:
    return crypto.seal_blob(dek, vectors.encode(vector), crypto.vector_aad(space_id, binding, model))


def score(
    cache: SegmentCache,
    dek: bytes,
    space_id: str,
    model: str,
    found: Found,
    query: npt.ArrayLike,
    *,
    repo: str = "",
    exclude: str = "",
    depth: int = 10,
) -> Scored:
    """Every head of the space scored against `query`: the segments (opened now if the cache
    lacks them), each row replaced by the head's delta row when it has one."""
    q = vectors.unit(query)
    for blob in found.opening:
        aad = crypto.segment_aad(space_id, blob["id"], model)
        opened = crypto.unseal(dek, bytes(blob["nonce"]), bytes(blob["ciphertext"]), aad)
        cache.put(space_id, model, blob["id"], vectors.unpack(opened))
    changed = {row["id"]: row for row in found.delta}

    def wanted(session_id: str, its_repo: str) -> bool:
        return session_id != exclude and (not repo or its_repo == repo)

    ids: list[str] = []
    scores: list[np.ndarray] = []
    for listed in found.segments:
        segment = cache.get(space_id, model, listed["id"])
        if segment is None or not segment.ids:
            continue
        rows = zip(segment.ids, segment.repos, strict=True)
        keep = np.array([i not in changed and wanted(i, r) for i, r in rows])
        if keep.any():
            ids += [i for i, k in zip(segment.ids, keep, strict=True) if k]
            scores.append(segment.matrix[keep] @ q)
    fresh: list[tuple[str, vectors.Matrix]] = []
    for row in changed.values():
        vector = open_vector(dek, space_id, model, row)
        if vector is not None and wanted(row["id"], row["repo"]):
            fresh.append((row["id"], vector))
    if fresh:
        ids += [i for i, _ in fresh]
        scores.append(np.stack([v for _, v in fresh]) @ q)
    if not ids:
        return Scored([], {})
    every = np.concatenate(scores)
    top = np.argsort(-every, kind="stable")[:depth]
    cosine = dict(zip(ids, (float(s) for s in every), strict=True))
    return Scored([(ids[i], float(every[i])) for i in top], cosine)


def compact(db: Database, at: Tenant, dek: bytes, model: str) -> int:
    """The space's vectors of `model` folded into new segments, in place of the old ones, under
    the space's usage-row lock (saves wait, briefly); returns how many heads they hold."""
    space_id = at.space

    def work(conn: Connection) -> int:
        stored.lock(conn, space_id)
        rows, through = stored.live(conn, space_id, model)
        made = []
        for start in range(0, len(rows), SEGMENT_ROWS):
            part = rows[start : start + SEGMENT_ROWS]
            opened = [open_vector(dek, space_id, model, row) for row in part]
            encoded = [vectors.encode(v) for v in opened if v is not None]
            kept = [row for row, v in zip(part, opened, strict=True) if v is not None]
            segment_id = str(uuid.uuid4())
            plain = vectors.pack(
                [r["id"] for r in kept], [r["version"] for r in kept], [r["repo"] for r in kept], encoded
            )
            nonce, ciphertext = crypto.seal(dek, plain, crypto.segment_aad(space_id, segment_id, model))
            made.append({"id": segment_id, "rows": len(kept), "nonce": nonce, "ciphertext": ciphertext})
        stored.replace_segments(conn, space_id, model, through, made)
        return len(rows)

    return db.in_tenant(at, work, idempotent=True)
