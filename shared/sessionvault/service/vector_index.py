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
# A search that finds more changed heads than max(DELTA_MIN, an eighth of the heads its
# segments hold) compacts the space after answering: each search opens every delta row (a
# sealed vector each: ~10 us and ~1 KB of the flight), while a compaction reads the whole
# space, so the delta may grow with the space (the compactions' cost stays linear in the
# changes). The maintenance task folds smaller deltas.
DELTA_MIN = 64
DELTA_SHARE = 8
# Up to EXACT_ROWS heads (~4 ms at 10,000 on one core), a search scores every row; past it, a
# first pass over the rows' sign bits keeps max(SHORTLIST_MIN, a SHORTLIST_SHARE-th of them),
# and the delta, for the exact cosine (the float32 product over every row is memory-bound:
# ~12 ms at 100,000 heads here; the first pass reads 1/32 of the bytes).
EXACT_ROWS = 20_000
SHORTLIST_MIN = 1_000
SHORTLIST_SHARE = 50
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
class Part:
    """Rows one search scores: a segment's, or the delta's (opened by the search), with which of
    them may be found (not superseded by the delta, not the excluded session, in the repo asked)."""

    ids: tuple[str, ...]
    row_of: dict[str, int]
    matrix: vectors.Matrix
    live: npt.NDArray[np.bool_]
    signs: vectors.Signs | None  # a segment's sign bits; None: the delta, always scored exactly


@dataclass(frozen=True)
class Scored:
    """The heads closest in meaning (best first: id, cosine), and any live head's cosine on
    demand (a keyword hit says how close in meaning it is too)."""

    best: list[tuple[str, float]]
    parts: list[Part]
    query: vectors.Matrix

    def cosine(self, session_id: str) -> float | None:
        for part in self.parts:
            row = part.row_of.get(session_id)
            if row is not None and part.live[row]:
                return float(part.matrix[row] @ self.query)
        return None


def overgrown(found: Found) -> bool:
    """Whether the delta a search read is worth a compaction (DELTA_MIN, DELTA_SHARE). Only its
    sealed vectors count: a compaction folds those, not a head still holding a plaintext vector
    (the seal task's), nor one without a vector of the model (a space of another model's
    vectors would otherwise be compacted, to no effect, by every search)."""
    held = sum(int(s["rows"]) for s in found.segments)
    foldable = sum(1 for row in found.delta if row.get("sealed_vector") is not None)
    return foldable > max(DELTA_MIN, held // DELTA_SHARE)


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
    parts: list[Part] = []
    for listed in found.segments:
        segment = cache.get(space_id, model, listed["id"])
        if segment is None or not segment.ids:
            continue
        live = np.ones(len(segment.ids), dtype=np.bool_)
        for session_id in (*changed, exclude):
            row = segment.row_of.get(session_id)
            if row is not None:
                live[row] = False
        if repo:
            live &= segment.repos == repo
        parts.append(Part(segment.ids, segment.row_of, segment.matrix, live, segment.signs))
    fresh = [(row["id"], open_vector(dek, space_id, model, row)) for row in changed.values()]
    kept = [
        (i, v) for (i, v), row in zip(fresh, changed.values(), strict=True)
        if v is not None and i != exclude and (not repo or row["repo"] == repo)
    ]  # fmt: skip
    if kept:
        ids = tuple(i for i, _ in kept)
        matrix = np.stack([v for _, v in kept])
        parts.append(Part(ids, {i: n for n, i in enumerate(ids)}, matrix, np.ones(len(ids), np.bool_), None))
    names, every = cosines(parts, q)
    wanted = min(depth, len(every))
    top = np.argpartition(-every, wanted - 1)[:wanted] if wanted else np.array([], dtype=int)
    top = top[np.argsort(-every[top], kind="stable")]
    return Scored([(names[i], float(every[i])) for i in top], parts, q)


def cosines(parts: list[Part], q: vectors.Matrix) -> tuple[list[str], vectors.Matrix]:
    """The live rows' cosines with `q`: every row of a space of up to EXACT_ROWS heads; past
    that, those of the shortlist (`_shortlist`), which holds the best rows (recall: BENCHMARKS.md)."""
    import numpy as np

    held = sum(len(p.ids) for p in parts)
    fresh = sum(len(p.ids) for p in parts if p.signs is None)
    wanted = max(SHORTLIST_MIN, held // SHORTLIST_SHARE) + fresh
    shortlist = _shortlist(parts, q, wanted) if held > EXACT_ROWS and wanted < held else None
    names: list[str] = []
    scores: list[vectors.Matrix] = []
    for k, p in enumerate(parts):
        if shortlist is None:  # the whole product, then the live rows: no copy of the matrix
            rows = np.flatnonzero(p.live)
            scores.append((p.matrix @ q)[rows])
        else:
            rows = shortlist[k]
            scores.append(p.matrix[rows] @ q)
        names += [p.ids[r] for r in rows]
    return names, np.concatenate(scores) if scores else np.zeros(0, dtype=np.float32)


def _shortlist(parts: list[Part], q: vectors.Matrix, wanted: int) -> list[npt.NDArray[np.intp]]:
    """Per part, its live rows among the `wanted` rows of all parts whose sign bits differ least
    from the query's (vectors.apart); the delta's rows are always among them."""
    import numpy as np

    query_signs = vectors.signs(q)
    apart = []
    for p in parts:  # 0: the delta's; 1 + the bits apart: a segment's; the most: not live
        distances = (
            np.zeros(len(p.ids), np.uint16) if p.signs is None else vectors.apart(p.signs, query_signs) + 1
        )
        distances[~p.live] = np.iinfo(np.uint16).max
        apart.append(distances)
    kept = np.sort(np.argpartition(np.concatenate(apart), wanted)[:wanted])
    starts = np.cumsum([0] + [len(p.ids) for p in parts])
    cut = np.searchsorted(kept, starts)
    rows = [kept[cut[k] : cut[k + 1]] - starts[k] for k in range(len(parts))]
    return [r[p.live[r]] for r, p in zip(rows, parts, strict=True)]


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
