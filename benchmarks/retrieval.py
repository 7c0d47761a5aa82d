"""Retrieval quality (issue 36, item 5): recall@5 and MRR of search by meaning only (the vector
list above its floor), by keyword only (the keyed terms above theirs) and fused (what
search_sessions answers), on the corpus of benchmarks/retrieval_corpus.py: sessions and
judged queries from the docstrings and names of the standard library and of SessionVault's own
dependencies, saved through the vault with the local model on an embedded PostgreSQL of its
own.

    .venv/bin/python -m benchmarks.run --only retrieval"""

from __future__ import annotations

import base64
import os
import platform
import shutil
import tempfile
from pathlib import Path

from .common import make_settings, section
from .retrieval_corpus import MODULES, Query, build

RANK_DEPTH = 10  # MRR counts the judged answer within the first ten


def _metrics(ranked: list[list[str]], queries: list[Query]) -> tuple[float, float]:
    at5 = sum(q.answer in names[:5] for names, q in zip(ranked, queries, strict=True))
    mrr = sum(
        1.0 / (names.index(q.answer) + 1) if q.answer in names[:RANK_DEPTH] else 0.0
        for names, q in zip(ranked, queries, strict=True)
    )
    return at5 / len(queries), mrr / len(queries)


def retrieval() -> None:
    from sessionvault.core import records
    from sessionvault.db import identity
    from sessionvault.db.pool import Database
    from sessionvault.local.host import embedded
    from sessionvault.runtime import open_runtime
    from sessionvault.service import accounts, answers
    from sessionvault.service.principal import Principal

    sessions, queries = build()
    exact, meaning = (sum(q.kind == kind for q in queries) for kind in ("exact", "meaning"))
    section(
        "Retrieval: by meaning, by keyword, fused (issue 36)",
        ".venv/bin/python -m benchmarks.run --only retrieval",
        f"corpus: {len(sessions)} sessions from the docstrings of {len(MODULES)} modules (Python"
        f" {platform.python_version()}'s standard library, psycopg, cryptography, pydantic, starlette,"
        f" anyio); {len(queries)} judged queries, one answer each: {exact} naming an identifier, {meaning}"
        " by meaning (a docstring's first sentence the session leaves out); the local model"
        " (all-MiniLM-L6-v2), one space, no repo filter",
    )
    home = Path(tempfile.mkdtemp(prefix="sv-bench-retrieval-"))
    db = embedded.start(home)
    master = base64.b64encode(os.urandom(32)).decode()
    # The admin role names its tenant by id (no proof needed); row security still holds.
    rt = open_runtime(make_settings(db.admin_url, master, "bench-retrieval-salt-0123456789abcdef"))
    try:
        admin = Database(db.admin_url, max_size=1)
        user_id = accounts.create_user(admin, rt.keys.provider, "bench-retrieval")
        who = Principal(user_id, identity.wrapped_key(admin, user_id))
        for record in sessions:
            rt.vault.save(who, records.parse(records.SaveArgs, record))
        space = rt.vault.spaces.of(who, "")
        names: dict[str, list[list[str]]] = {"meaning": [], "keyword": [], "fused": []}
        for q in queries:  # the two lists search_sessions fuses, then its fusion
            ranked = rt.vault.reader.rankings(who, space, q.text, "", RANK_DEPTH)
            names["meaning"].append([h["name"] for h in answers.relevant(ranked.by_meaning)])
            names["keyword"].append([h["name"] for h in answers.keyword_relevant(ranked.by_keyword)])
            fused = answers.fused(ranked.by_meaning, ranked.by_keyword, RANK_DEPTH)
            names["fused"].append([h["name"] for h in fused])
        print(f"   {'ranking':10s} {'half':8s} {'recall@5':>9s} {'MRR':>7s}")
        for kind in ("exact", "meaning"):
            half = [i for i, q in enumerate(queries) if q.kind == kind]
            for ranking, ranked in names.items():
                at5, mrr = _metrics([ranked[i] for i in half], [queries[i] for i in half])
                print(f"   {ranking:10s} {kind:8s} {at5:9.3f} {mrr:7.3f}")
        admin.close()
    finally:
        rt.close()
        embedded.release(home, stop_if_last=True)
        shutil.rmtree(home, ignore_errors=True)
