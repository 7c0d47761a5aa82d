"""A space's vectors as they are stored (issue 36): never in the clear. A vector is text in other
words (inversion attacks rebuild much of a short text from it), so each head's vector is sealed
on its own row, and a space's vectors are also kept packed in a few sealed segments that a
search opens once per process and scores in memory. Pure: the layout and the scoring's inputs;
the sealing is `core.crypto`'s, the rows are `db.vectors`'.

A vector is stored unit-length as little-endian float16 (768 bytes at 384 dimensions): a
cosine from float16 differs from float32's by under 1e-3, so the ranking needs no second,
exact pass. A large space is searched in two passes: the rows' sign bits first (`apart`:
48 bytes a row at 384 dimensions, compared by popcount), then the exact cosine of the rows
whose signs agree most with the query's. A segment is a length-prefixed JSON header (row
count, dimensions, and per row the session id, its head version and its repo) followed by the
rows' float16 matrix.

Writing one (a save) needs no numpy (`struct`'s half floats): a Lambda's init and its saves
never import it; reading them (a search, a compaction) imports it on first use."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]
    Signs = npt.NDArray[np.uint64]


def encode(vector: Sequence[float]) -> bytes:
    """A vector as one row stores it: unit length, float16."""
    values = [float(x) for x in vector]
    norm = math.sqrt(math.fsum(x * x for x in values)) or 1.0
    return struct.pack(f"<{len(values)}e", *(x / norm for x in values))


def decode(blob: bytes) -> Matrix:
    import numpy as np

    return np.frombuffer(blob, dtype="<f2").astype(np.float32)


def unit(vector: Any) -> Matrix:
    """A query vector as the stored ones are scored against: unit length, float32."""
    import numpy as np

    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


@dataclass(frozen=True)
class Segment:
    """Many heads' vectors, opened: row i is session ids[i] at head version versions[i], with
    what a search needs at hand (the row of each id, the repos as one array to compare)."""

    ids: tuple[str, ...]
    versions: tuple[int, ...]
    repos: npt.NDArray[np.str_]
    matrix: Matrix  # float32, one unit-length row per head
    row_of: dict[str, int] = field(default_factory=dict)
    signs: Signs | None = None  # the rows' sign bits (`signs`), made when the segment is opened

    @property
    def nbytes(self) -> int:
        held = self.matrix.nbytes + self.repos.nbytes + (0 if self.signs is None else self.signs.nbytes)
        return int(held) + 200 * len(self.ids)  # ids, the map


def pack(ids: Sequence[str], versions: Sequence[int], repos: Sequence[str], rows: Sequence[bytes]) -> bytes:
    """The plaintext of a segment: its header and its rows (each as `encode` made it)."""
    dims = len(rows[0]) // 2 if rows else 0
    header = json.dumps(
        {"rows": len(ids), "dims": dims, "ids": list(ids), "versions": list(versions), "repos": list(repos)}
    ).encode()
    return struct.pack("<I", len(header)) + header + b"".join(rows)


def unpack(blob: bytes) -> Segment:
    import numpy as np

    (size,) = struct.unpack_from("<I", blob)
    header = json.loads(blob[4 : 4 + size])
    matrix = np.frombuffer(blob, dtype="<f2", offset=4 + size).astype(np.float32)
    matrix = matrix.reshape(header["rows"], header["dims"]) if header["rows"] else matrix.reshape(0, 0)
    ids = tuple(header["ids"])
    repos = np.array(header["repos"], dtype=np.str_)
    row_of = {i: n for n, i in enumerate(ids)}
    return Segment(ids, tuple(header["versions"]), repos, matrix, row_of, signs(matrix))


def signs(matrix: Matrix) -> Signs:
    """The signs of each row (1: positive) as bits, 64 dimensions to a word, word-major: out[w]
    holds word w of every row (a row of 384 dimensions is out[0..5][row]), so that comparing
    them with a query runs down contiguous arrays (~5x faster than row by row). A single
    vector gives its words."""
    import numpy as np

    bits = np.packbits(matrix > 0, axis=-1)
    if bits.shape[-1] % 8:  # whole words: the padding bits are 0 in every row and the query
        bits = np.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, 8 - bits.shape[-1] % 8)])
    words = np.ascontiguousarray(bits).view(np.uint64)
    out: Signs = np.ascontiguousarray(words.T)
    return out


def apart(rows: Signs, query: Signs) -> npt.NDArray[np.uint16]:
    """How many sign bits each row has unlike the query's: the first pass of a search over many
    rows. Two unit vectors' cosine falls as their sign bits differ (random hyperplanes: the
    share of differing bits estimates their angle over pi), so the rows closest by cosine are
    among the closest by this count once enough of those are kept (the recall measured in
    BENCHMARKS.md, "Sealed vectors")."""
    import numpy as np

    out: npt.NDArray[np.uint16] = np.bitwise_count(rows[0] ^ query[0]).astype(np.uint16)
    for word, bits in zip(rows[1:], query[1:], strict=True):
        out += np.bitwise_count(word ^ bits)
    return out
