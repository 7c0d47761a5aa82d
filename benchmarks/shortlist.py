"""The sign-bit shortlist on real embeddings (issue 36): recall@10 of a large space's search
(service/vector_index.cosines: sign bits first, then the exact cosine of the shortlisted rows)
against the exact cosine over every row, on the local model's vectors of the standard library's
docstrings (BENCH_SHORTLIST_DOCS, default 20,000: ~4-7 minutes to embed on 2 cores) and 200
queries, each a docstring's first sentence from outside the set.

    .venv/bin/python -m benchmarks.run --only shortlist"""

from __future__ import annotations

import ast
import os
import random
import sysconfig
import time
from pathlib import Path

from .common import p50, section

QUERIES = 200
SHARES = ((50, 1_000), (50, 400), (100, 200))  # (SHORTLIST_SHARE, SHORTLIST_MIN): the first is the product's


def _docstrings(limit: int) -> list[str]:
    texts: list[str] = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(errors="ignore"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 40:
                    texts.append(f"{node.name}: {doc[:400]}")
        if len(texts) >= limit:
            break
    random.Random(1).shuffle(texts)
    return texts


def shortlist_figures() -> None:
    import numpy as np

    from sessionvault.core import vectors
    from sessionvault.core.embedding.providers import LocalEmbedder
    from sessionvault.service import vector_index

    size = int(os.environ.get("BENCH_SHORTLIST_DOCS", "20000"))
    section(
        "The sign-bit shortlist on real embeddings (issue 36)",
        ".venv/bin/python -m benchmarks.run --only shortlist",
        f"{size:,} docstrings of Python's standard library as the space, {QUERIES} other docstrings'"
        " first sentences as queries, the local model (all-MiniLM-L6-v2); one BLAS thread",
    )
    texts = _docstrings(size + QUERIES)
    model = LocalEmbedder._load()
    began = time.perf_counter()
    rows = model.embed(texts[QUERIES : QUERIES + size])
    queries = model.embed([t.split(":", 1)[1].split(".")[0] for t in texts[:QUERIES]])
    print(f"   embedded {len(rows):,} + {len(queries)} texts in {time.perf_counter() - began:.0f} s")
    parts = []
    for start in range(0, len(rows), vector_index.SEGMENT_ROWS):
        matrix = np.ascontiguousarray(rows[start : start + vector_index.SEGMENT_ROWS])
        ids = tuple(str(i) for i in range(start, start + len(matrix)))
        live = np.ones(len(ids), dtype=np.bool_)
        parts.append(
            vector_index.Part(ids, {i: n for n, i in enumerate(ids)}, matrix, live, vectors.signs(matrix))
        )
    kept = (vector_index.EXACT_ROWS, vector_index.SHORTLIST_SHARE, vector_index.SHORTLIST_MIN)
    exact_ms, exact = [], []
    for q in queries:
        began = time.perf_counter()
        exact.append({str(i) for i in np.argsort(-(rows @ q))[:10]})
        exact_ms.append((time.perf_counter() - began) * 1000)
    print(f"   exact cosine over every row: p50 {p50(exact_ms):.2f} ms")
    try:
        vector_index.EXACT_ROWS = 0
        for share, least in SHARES:
            vector_index.SHORTLIST_SHARE, vector_index.SHORTLIST_MIN = share, least
            recall, took = [], []
            for q, truth in zip(queries, exact, strict=True):
                began = time.perf_counter()
                names, cosines = vector_index.cosines(parts, q)
                best = {names[i] for i in np.argsort(-cosines)[:10]}
                took.append((time.perf_counter() - began) * 1000)
                recall.append(len(best & truth) / 10)
            wanted = max(least, len(rows) // share)
            mark = "  (the product's setting)" if (share, least) == SHARES[0] else ""
            print(
                f"   shortlist {wanted:,} ({wanted / len(rows):.1%}): recall@10 mean {np.mean(recall):.4f},"
                f" worst query {min(recall):.1f}; p50 {p50(took):.2f} ms{mark}"
            )
    finally:
        vector_index.EXACT_ROWS, vector_index.SHORTLIST_SHARE, vector_index.SHORTLIST_MIN = kept
