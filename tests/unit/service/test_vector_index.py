"""The in-memory side of the sealed vector search: when a search folds the delta, and the
first pass over sign bits that a large space is searched with."""

from __future__ import annotations

import numpy as np

from sessionvault.core import vectors
from sessionvault.db.search import Found
from sessionvault.service import vector_index


def found(delta: int, segment_rows: list[int], *, unfoldable: int = 0) -> Found:
    segments = [{"id": f"s{i}", "through_seq": 1, "rows": n} for i, n in enumerate(segment_rows)]
    sealed = [{"id": f"d{i}", "sealed_vector": b"v"} for i in range(delta)]
    # heads a compaction cannot fold: a plaintext vector (the seal task's), or none of the model
    others = [{"id": f"p{i}", "sealed_vector": None} for i in range(unfoldable)]
    return Found([], segments, [], sealed + others)


def test_a_small_space_is_compacted_once_its_delta_passes_the_minimum():
    assert not vector_index.overgrown(found(vector_index.DELTA_MIN, []))
    assert vector_index.overgrown(found(vector_index.DELTA_MIN + 1, []))
    assert vector_index.overgrown(found(300, [200]))  # a space saved in one go: folded at once


def test_heads_a_compaction_cannot_fold_never_make_a_search_compact():
    assert not vector_index.overgrown(found(0, [], unfoldable=5_000))


def test_a_large_space_lets_its_delta_grow_with_it():
    held = [4096] * 25  # ~100,000 heads: a compaction reads them all, so it waits for an eighth
    share = sum(held) // vector_index.DELTA_SHARE
    assert not vector_index.overgrown(found(share, held))
    assert vector_index.overgrown(found(share + 1, held))


def part(matrix, *, delta: bool = False, dead: tuple[int, ...] = (), name: str = "r"):
    ids = tuple(f"{name}{i}" for i in range(len(matrix)))
    live = np.ones(len(ids), dtype=np.bool_)
    live[list(dead)] = False
    signs = None if delta else vectors.signs(matrix)
    return vector_index.Part(ids, {i: n for n, i in enumerate(ids)}, matrix, live, signs)


def unit_rows(rng, n: int, dims: int = 384):
    rows = rng.standard_normal((n, dims)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def clustered_rows(rng, n: int, topics: int = 200, dims: int = 384):
    """Rows around a few topics, as sessions about the same work are (benchmarks/sealed_vectors)."""
    centres = unit_rows(rng, topics, dims)[rng.integers(0, topics, n)]
    rows = centres + 0.9 * unit_rows(rng, n, dims)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_past_the_exact_bound_the_sign_bits_shortlist_holds_the_exact_top_ten(monkeypatch):
    monkeypatch.setattr(vector_index, "EXACT_ROWS", 1_000)
    rng = np.random.default_rng(3)
    segments = [part(clustered_rows(rng, 4_000), name=f"s{k}-") for k in range(5)]
    every = np.concatenate([p.matrix for p in segments])
    names = [i for p in segments for i in p.ids]
    recall = []
    for _ in range(40):  # a query near a stored head, as a paraphrase is near its session
        near = every[rng.integers(len(every))] + 0.3 * unit_rows(rng, 1)[0]
        q = near / np.linalg.norm(near)
        got, cosines = vector_index.cosines(segments, q)
        assert len(got) == vector_index.SHORTLIST_MIN  # the shortlist, not the 20,000 rows
        exact = {names[i] for i in np.argsort(-(every @ q))[:10]}
        recall.append(len(exact & {got[i] for i in np.argsort(-cosines)[:10]}) / 10)
    assert sum(recall) / len(recall) >= 0.99


def test_the_shortlist_always_keeps_the_delta_and_never_a_row_that_is_not_live(monkeypatch):
    monkeypatch.setattr(vector_index, "EXACT_ROWS", 100)
    monkeypatch.setattr(vector_index, "SHORTLIST_MIN", 50)
    rng = np.random.default_rng(5)
    segment = part(unit_rows(rng, 2_000), dead=tuple(range(0, 2_000, 2)))
    delta = part(-unit_rows(rng, 3), delta=True, name="d")  # far from anything
    q = segment.matrix[0]  # the best row is dead: superseded by a delta row
    got, _ = vector_index.cosines([segment, delta], q)
    assert {"d0", "d1", "d2"} <= set(got)
    assert "r0" not in got and all(int(i[1:]) % 2 for i in got if i.startswith("r"))
    assert len(got) == 50 + 3 - len([i for i in got if i.startswith("r") and int(i[1:]) % 2 == 0])
