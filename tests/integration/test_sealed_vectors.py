"""No vector in the clear (issue 36, item 1): a head's vector is sealed on its row and a space's
vectors in sealed segments; no column of any table holds an array or vector that correlates
with a saved text's embedding; search by meaning over them ranks as exact float32 cosine does;
the segments, the delta, deletions, re-saves, the move of plaintext vectors and a re-key all
keep it right."""

from __future__ import annotations

import hashlib

import numpy as np
import psycopg
import pytest

from sessionvault.core import records
from sessionvault.core.records import embedding_text
from sessionvault.db import search
from sessionvault.jobs import maintenance, rekey
from sessionvault.service import vector_index
from sessionvault.service.vault import Vault

from ..conftest import make_user
from .test_rekey import current

DIMS = 384


class HashEmbedder:
    """A deterministic unit vector per text (no model): the exact ranking is computable here."""

    model = "test:hash-384"

    def embed(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()


@pytest.fixture
def hashed(runtime):
    return Vault(runtime.db, runtime.keys, HashEmbedder())


def text_of(name, summary):
    return embedding_text({"name": name, "summary": summary})


def save(vault, who, name, summary):
    return vault.save(who, records.parse(records.SaveArgs, {"name": name, "summary": summary}))


def by_meaning(vault, who, query_vector, depth=10):
    """The vector search alone, as search_sessions runs it (its reading, then the scoring)."""
    reader = vault.reader
    space = vault.spaces.of(who, "")
    model = reader.embedder.model
    with vault.spaces.entered(who, space, "read", "test") as at:
        flight = reader._find(at, search.Query([], model))
        return reader._by_meaning(at, reader.dek(space), flight, query_vector, depth)[0]


def test_no_column_of_any_table_holds_a_vector_of_a_saved_text(local_runtime, maint_rt, pg):
    who = make_user(local_runtime)
    texts = {
        "jwt": "Added JWT login: access tokens expire after 15 minutes, refresh tokens rotate",
        "pool": "Postgres connections exhausted under load; added pgbouncer in transaction mode",
    }
    for name, summary in texts.items():
        save(local_runtime.vault, who.principal, name, summary)
    maintenance.compact_vectors(maint_rt)  # segments too
    embedder = local_runtime.vault.embedder
    wanted = [np.asarray(embedder.embed(t), dtype=np.float32) for t in texts.values()]
    wanted += [np.asarray(embedder.embed(text_of(n, t)), dtype=np.float32) for n, t in texts.items()]
    found = 0
    with psycopg.connect(pg.owner_url) as conn:  # the owner: every row, past row security
        columns = conn.execute(
            "SELECT table_name, column_name, udt_name FROM information_schema.columns"
            " WHERE table_schema = 'public' AND udt_name IN ('vector', '_float4', '_float8', 'bytea')"
        ).fetchall()
        for table, column, kind in columns:
            cast = f"{column}::real[]" if kind != "bytea" else column
            for (value,) in conn.execute(f'SELECT {cast} FROM "{table}" WHERE {column} IS NOT NULL'):
                for candidate in _as_vectors(value):
                    found += 1
                    for target in wanted:
                        cosine = float(
                            candidate @ target / (np.linalg.norm(candidate) * np.linalg.norm(target) or 1)
                        )
                        assert cosine <= 0.5, (table, column)
    assert found > 0  # the sealed columns were read and looked at


def _as_vectors(value):
    """A value read as every vector it could hold: an array as is; bytes as float16 and float32."""
    if isinstance(value, list):
        return [np.asarray(value, dtype=np.float32)] if len(value) == DIMS else []
    raw, out = bytes(value), []
    for dtype, size in (("<f2", 2), ("<f4", 4)):
        for start in range(0, min(len(raw), 64), 4):  # a nonce or header before it, any alignment
            chunk = raw[start : start + DIMS * size]
            if len(chunk) == DIMS * size:
                v = np.frombuffer(chunk, dtype=dtype).astype(np.float32)
                out.append(np.nan_to_num(v, nan=0.0, posinf=0.0, neginf=0.0))
    return out


def test_search_by_meaning_ranks_as_exact_float32_cosine_does(runtime, hashed):
    who = make_user(runtime).principal
    summaries = {f"s{i}": f"session number {i}" for i in range(120)}
    for name, summary in summaries.items():
        save(hashed, who, name, summary)
    vectors = {n: np.asarray(hashed.embedder.embed(text_of(n, s))) for n, s in summaries.items()}
    recall = []
    for probe in range(20):
        q = np.asarray(HashEmbedder().embed(f"query {probe}"))
        exact = sorted(vectors, key=lambda n: -float(vectors[n] @ q))[:10]
        got = [h["name"] for h in by_meaning(hashed, who, q, depth=10)]
        recall.append(len(set(got) & set(exact)) / 10)
    assert sum(recall) / len(recall) >= 0.99


def test_segments_and_the_delta_keep_search_right_through_saves_resaves_and_deletes(runtime, hashed):
    who = make_user(runtime).principal
    for i in range(30):
        save(hashed, who, f"n{i}", f"note {i}")
    target = np.asarray(hashed.embedder.embed(text_of("n7", "note 7")))
    assert by_meaning(hashed, who, target)[0]["name"] == "n7"  # all from the delta

    assert (
        vector_index.compact(
            runtime.db, who.at(), hashed.reader.dek(hashed.spaces.of(who, "")), HashEmbedder.model
        )
        == 30
    )
    assert by_meaning(hashed, who, target)[0]["name"] == "n7"  # from a segment, now cached
    space = hashed.spaces.of(who, "")
    assert len(hashed.reader.segments.ids(space.id, HashEmbedder.model)) == 1

    save(hashed, who, "n7", "rewritten entirely")  # its new vector replaces the segment's row
    assert "n7" not in [h["name"] for h in by_meaning(hashed, who, target)[:1]]
    fresh = np.asarray(hashed.embedder.embed(text_of("n7", "rewritten entirely")))
    assert by_meaning(hashed, who, fresh)[0]["name"] == "n7"

    hashed.delete(who, records.parse(records.DeleteArgs, {"name": "n7"}))
    assert "n7" not in [h["name"] for h in by_meaning(hashed, who, fresh)]


def test_the_seal_vectors_task_moves_plaintext_vectors_and_search_finds_them_before_and_after(
    runtime, hashed, maint_rt, pg
):
    who = make_user(runtime)
    save(hashed, who.principal, "old", "saved before the vectors were sealed")
    vector = HashEmbedder().embed(text_of("old", "saved before the vectors were sealed"))
    with psycopg.connect(pg.owner_url) as conn:  # as a head saved before migration 0023 is
        conn.execute(
            "UPDATE sessions SET sealed_vector = NULL, vector_seq = NULL, embedding = %s::vector"
            " WHERE user_id = %s",
            (str(vector), who.id),
        )
    assert by_meaning(hashed, who.principal, np.asarray(vector))[0]["name"] == "old"

    done = maintenance.run(maint_rt, "seal_vectors")
    assert done["sealed"] >= 1
    with psycopg.connect(pg.owner_url) as conn:
        row = conn.execute(
            "SELECT embedding IS NULL, sealed_vector IS NOT NULL FROM sessions WHERE user_id = %s", (who.id,)
        ).fetchone()
    assert row == (True, True)
    assert by_meaning(hashed, who.principal, np.asarray(vector))[0]["name"] == "old"
    assert maintenance.seal_vectors(maint_rt)["sealed"] == 0  # nothing left: idempotent


def test_a_rekeyed_space_is_still_found_by_meaning(runtime, hashed, admin_rt):
    who = make_user(runtime)
    save(hashed, who.principal, "kept", "found by meaning after a re-key")
    vector = np.asarray(HashEmbedder().embed(text_of("kept", "found by meaning after a re-key")))
    vector_index.compact(
        runtime.db,
        who.principal.at(),
        hashed.reader.dek(hashed.spaces.of(who.principal, "")),
        HashEmbedder.model,
    )
    assert by_meaning(hashed, who.principal, vector)[0]["name"] == "kept"  # its segment now cached
    rekey.rekey_user(admin_rt, who.id)  # the segments are dropped: the cached one names a gone id
    assert by_meaning(hashed, current(who.id), vector)[0]["name"] == "kept"  # read again from zero
    fresh = Vault(runtime.db, runtime.keys, HashEmbedder())  # a process that never saw the old key
    assert by_meaning(fresh, current(who.id), vector)[0]["name"] == "kept"


def test_the_compact_task_folds_changes_and_drops_a_deleted_sessions_vector(runtime, hashed, maint_rt, pg):
    who = make_user(runtime)

    def segment_rows():
        with psycopg.connect(pg.owner_url) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(rows), 0) FROM vector_segments WHERE user_id = %s", (who.id,)
            ).fetchone()
        return row[0] if row else None

    for i in range(3):
        save(hashed, who.principal, f"c{i}", f"compact me {i}")
    assert segment_rows() == 0
    maintenance.compact_vectors(maint_rt)
    assert segment_rows() == 3
    hashed.delete(who.principal, records.parse(records.DeleteArgs, {"name": "c1"}))
    maintenance.compact_vectors(maint_rt)
    assert segment_rows() == 2  # the deleted session's vector is in no segment any more
    done = maintenance.compact_vectors(maint_rt)
    assert done["skipped_users"] == 0 and segment_rows() == 2


def test_a_search_that_finds_a_large_delta_compacts_it_first(runtime, hashed, pg, monkeypatch):
    monkeypatch.setattr(vector_index, "DELTA_MIN", 3)
    who = make_user(runtime)
    for i in range(5):
        save(hashed, who.principal, f"d{i}", f"delta row {i}")
    target = np.asarray(hashed.embedder.embed(text_of("d3", "delta row 3")))
    assert by_meaning(hashed, who.principal, target)[0]["name"] == "d3"  # scored from the delta ...
    with psycopg.connect(pg.owner_url) as conn:  # ... which it then folded into a segment
        rows = conn.execute("SELECT sum(rows) FROM vector_segments WHERE user_id = %s", (who.id,)).fetchone()
    assert rows == (5,)
    assert by_meaning(hashed, who.principal, target)[0]["name"] == "d3"  # and now from the segment
