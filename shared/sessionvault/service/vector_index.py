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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sessionvault.core import crypto, vectors
from sessionvault.db import vectors as stored
from sessionvault.db.pool import Connection, Database, Tenant
from sessionvault.db.search import Found

if TYPE_CHECKING:  # numpy is imported by the first search, not by a Lambda's init or a save
    import numpy as np
    import numpy.typing as npt

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
        self._through: dict[tuple[str, str], int] = {}  # the segments' through_seq last read
        self._lock = threading.Lock()  # the local server's worker threads share one

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def since(self, space: str, model: str) -> int | None:
        """The through_seq of the space's segments when this process last read them (None: never)."""
        return self._through.get((space, model))

    def read(self, space: str, model: str, found: Found) -> None:
        """Remember how far the segments a search just listed go."""
        self._through[(space, model)] = max((int(s["through_seq"]) for s in found.segments), default=0)

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
    """The heads closest in meaning (best first: id, cosine), and every scored head's cosine
    on demand (a keyword hit says how close in meaning it is too)."""

    best: list[tuple[str, float]]
    parts: list[tuple[dict[str, int], npt.NDArray[np.float32]]]  # (row of each id, its cosines)

    def cosine(self, session_id: str) -> float | None:
        import numpy as np

        for row_of, scores in self.parts:
            row = row_of.get(session_id)
            if row is not None and np.isfinite(scores[row]):
                return float(scores[row])
        return None


def stale(found: Found, since: int | None) -> bool:
    """Whether a delta read past `since` may miss heads: the space's segments now go less far
    (a re-key dropped them), so heads at or before `since` are in no segment it listed."""
    return since is not None and max((int(s["through_seq"]) for s in found.segments), default=0) < since


def _opened(dek: bytes, space_id: str, model: str, row: dict[str, Any]) -> bytes:
    """A head's sealed vector (`sealed_vector`, `binding`) opened: its float16 row."""
    return crypto.open_blob(
        dek, bytes(row["sealed_vector"]), crypto.vector_aad(space_id, row["binding"], model)
    )


def open_vector(dek: bytes, space_id: str, model: str, row: dict[str, Any]) -> vectors.Matrix | None:
    """A head's vector from its row: sealed (`sealed_vector`, `binding`) or, saved before the
    move, plaintext (`plain_vector`)."""
    if row.get("sealed_vector") is not None:
        return vectors.decode(_opened(dek, space_id, model, row))
    if row.get("plain_vector") is not None:
        return vectors.unit(row["plain_vector"])
    return None


def seal_vector(dek: bytes, space_id: str, binding: str, model: str, vector: Sequence[float]) -> bytes:
    return crypto.seal_blob(dek, vectors.encode(vector), crypto.vector_aad(space_id, binding, model))


def reseal_vector(old_dek: bytes, new_dek: bytes, space_id: str, model: str, row: dict[str, Any]) -> bytes:
    """A head's sealed vector under a new key (a re-key), bound as before."""
    aad = crypto.vector_aad(space_id, row["binding"], model)
    return crypto.seal_blob(new_dek, _opened(old_dek, space_id, model, row), aad)


def score(
    cache: SegmentCache,
    dek: bytes,
    space_id: str,
    model: str,
    found: Found,
    query: Sequence[float] | vectors.Matrix,
    *,
    repo: str = "",
    exclude: str = "",
    depth: int = 10,
) -> Scored:
    """Every head of the space scored against `query`: the segments (opened now if the cache
    lacks them), each row replaced by the head's delta row when it has one."""
    import numpy as np

    q = vectors.unit(query)
    for blob in found.opening:
        aad = crypto.segment_aad(space_id, blob["id"], model)
        opened = crypto.unseal(dek, bytes(blob["nonce"]), bytes(blob["ciphertext"]), aad)
        cache.put(space_id, model, blob["id"], vectors.unpack(opened))
    changed = {row["id"]: row for row in found.delta}
    parts: list[tuple[dict[str, int], npt.NDArray[np.float32]]] = []
    names: list[tuple[str, ...]] = []
    for listed in found.segments:
        segment = cache.get(space_id, model, listed["id"])
        if segment is None or not segment.ids:
            continue
        scores = segment.matrix @ q  # every row at once; the ones not to be found set to -inf
        for session_id in (*changed, exclude):
            row = segment.row_of.get(session_id)
            if row is not None:
                scores[row] = -np.inf
        if repo:
            scores[segment.repos != repo] = -np.inf
        parts.append((segment.row_of, scores))
        names.append(segment.ids)
    fresh = [(row["id"], open_vector(dek, space_id, model, row)) for row in changed.values()]
    kept = [
        (i, v) for (i, v), row in zip(fresh, changed.values(), strict=True)
        if v is not None and i != exclude and (not repo or row["repo"] == repo)
    ]  # fmt: skip
    if kept:
        parts.append(({i: n for n, (i, _) in enumerate(kept)}, np.stack([v for _, v in kept]) @ q))
        names.append(tuple(i for i, _ in kept))
    if not parts:
        return Scored([], [])
    every = np.concatenate([scores for _, scores in parts])
    ids = [i for part in names for i in part]
    wanted = min(depth, int(np.isfinite(every).sum()))
    top = np.argpartition(-every, wanted - 1)[:wanted] if wanted else np.array([], dtype=int)
    top = top[np.argsort(-every[top], kind="stable")]
    return Scored([(ids[i], float(every[i])) for i in top], parts)


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
            opened = [_opened(dek, space_id, model, row) for row in part]  # float16 rows, as stored
            segment_id = str(uuid.uuid4())
            ids, versions, repos = ([r[c] for r in part] for c in ("id", "version", "repo"))
            plain = vectors.pack(ids, versions, repos, opened)
            nonce, ciphertext = crypto.seal(dek, plain, crypto.segment_aad(space_id, segment_id, model))
            made.append({"id": segment_id, "rows": len(part), "nonce": nonce, "ciphertext": ciphertext})
        stored.replace_segments(conn, space_id, model, through, made)
        return len(rows)

    return db.in_tenant(at, work, idempotent=True)
