"""A space's vectors as they are stored (issue 36): never in the clear. A vector is text in other
words (inversion attacks rebuild much of a short text from it), so each head's vector is sealed
on its own row, and a space's vectors are also kept packed in a few sealed segments that a
search opens once per process and scores in memory. Pure: the layout and the scoring; the
sealing is `core.crypto`'s, the rows are `db.vectors`'.

A vector is stored unit-length as little-endian float16 (768 bytes at 384 dimensions): a
cosine from float16 differs from float32's by under 1e-3, so the ranking needs no second,
exact pass. A segment is a length-prefixed JSON header (row count, dimensions, and per row the
session id, its head version and its repo) followed by the rows' float16 matrix."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]
_F16 = np.dtype("<f2")


def encode(vector: npt.ArrayLike) -> bytes:
    """A vector as one row stores it: unit length, float16."""
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return (v / norm if norm else v).astype(_F16).tobytes()


def decode(blob: bytes) -> Matrix:
    return np.frombuffer(blob, dtype=_F16).astype(np.float32)


def unit(vector: npt.ArrayLike) -> Matrix:
    """A query vector as the stored ones are scored against: unit length, float32."""
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

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes) + int(self.repos.nbytes) + 200 * len(self.ids)  # ids, the map


def pack(ids: Sequence[str], versions: Sequence[int], repos: Sequence[str], rows: Sequence[bytes]) -> bytes:
    """The plaintext of a segment: its header and its rows (each as `encode` made it)."""
    dims = len(rows[0]) // _F16.itemsize if rows else 0
    header = json.dumps(
        {"rows": len(ids), "dims": dims, "ids": list(ids), "versions": list(versions), "repos": list(repos)}
    ).encode()
    return struct.pack("<I", len(header)) + header + b"".join(rows)


def unpack(blob: bytes) -> Segment:
    (size,) = struct.unpack_from("<I", blob)
    header = json.loads(blob[4 : 4 + size])
    matrix = np.frombuffer(blob, dtype=_F16, offset=4 + size).astype(np.float32)
    matrix = matrix.reshape(header["rows"], header["dims"]) if header["rows"] else matrix.reshape(0, 0)
    ids = tuple(header["ids"])
    repos = np.array(header["repos"], dtype=np.str_)
    return Segment(ids, tuple(header["versions"]), repos, matrix, {i: n for n, i in enumerate(ids)})
