"""The mcp-memory-service importer has the bounds of every importer: a memory over the per-item
cap, a store over the per-import bytes or rows, is refused with an error naming the cap, and
nothing is imported. The mapping itself is tested on a store the real tool wrote
(tests/integration/test_importers.py); these stores are the table's minimal shape."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sessionvault.errors import ValidationFailed
from sessionvault.local.data.importers import IMPORTERS, _common

read = IMPORTERS["mcp-memory-service"]


def store(folder: Path, *contents: str) -> Path:
    db = folder / "sqlite_vec.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE memories (content_hash TEXT, content TEXT, tags TEXT, memory_type TEXT,"
            " metadata TEXT, created_at REAL, created_at_iso TEXT)"
        )
        conn.executemany(
            "INSERT INTO memories VALUES (?, ?, '', 'note', '{}', ?, '')",
            [(f"{i:064x}", text, 1_700_000_000.0 + i) for i, text in enumerate(contents)],
        )
    conn.close()
    return db


def test_memories_within_the_caps_are_read(tmp_path: Path) -> None:
    store(tmp_path, "first memory", "second memory")
    assert [r["summary"].splitlines()[0] for r in read(tmp_path)] == ["first memory", "second memory"]


def test_a_memory_over_the_per_item_cap_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(_common, "MAX_ITEM_BYTES", 500)
    store(tmp_path, "small", "y" * 600)
    with pytest.raises(ValidationFailed, match=r"memory 2 of .* over the 500-byte cap on one item"):
        read(tmp_path)


def test_a_store_over_the_per_import_caps_is_refused(tmp_path: Path, monkeypatch) -> None:
    store(tmp_path, *(f"memory number {i}" for i in range(5)))
    monkeypatch.setattr(_common, "MAX_IMPORT_ITEMS", 4)
    with pytest.raises(ValidationFailed, match=r"more than 4 items to import"):
        read(tmp_path)
    monkeypatch.setattr(_common, "MAX_IMPORT_ITEMS", 10)
    monkeypatch.setattr(_common, "MAX_IMPORT_BYTES", 300)  # each row is ~100 bytes with its hash
    with pytest.raises(ValidationFailed, match=r"more than 300 bytes to import"):
        read(tmp_path)
