"""mcp-memory-service's memories (its sqlite-vec store, `sqlite_vec.db`) as sessions.

Read straight from the SQLite file, read-only; the sqlite-vec extension is not needed (the
vectors are not read). PATH is the database file or a folder holding `sqlite_vec.db`.

The mapping, one session per memory (docs/backup.md says the same to users):
- name: `mcp-memory/<first words of the memory>-<first 8 hex of its content hash>`, with the
  store's name after `mcp-memory/` when it is not `default`. The hash is that of the memory's
  first version, so every version of one memory is one session;
- versions: a memory revised with mcp-memory-service's versioned update (parent_id /
  superseded_by) becomes one session whose versions are the memory's versions, oldest first;
- summary: the memory's text, then `Tags: ...`, `Type: ...`, when it was saved there and, for a
  revised memory, the reason given for the change; a long memory (and one the service split
  into chunks, joined again here) is cut at 4,000 characters with a marker;
- decisions: a memory of type decision (or architecture, tool_choice, approach,
  configuration): the text as the decision, the part after " because " as its reason, else the
  metadata's `reason`, else "not recorded in mcp-memory-service";
- errors: type error, bug, failure, exception, timeout or mistake;
- todos: action_item, follow_up, backlog_item, retrospective_action;
- plan: planning, sprint_goal, milestone, deliverable, deadline;
- tried: learning, insight, gotcha, anti_pattern, best_practice (what was learned by trying);
- client: `mcp-memory-service`; repo: none (the service records no repository).
Dropped: the embeddings, the metadata (but `reason`), confidence, access counts, quality
scores, the knowledge graph (memory_graph), beliefs, sync state; deleted memories (and every
version of a memory whose newest version was deleted) are not imported.

Bounded like the other importers (_common.Budget): a row (its text columns) of at most 1 MB,
at most 50 MB and 10,000 rows an import, deleted rows included; over a cap, nothing is imported.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessionvault.errors import ValidationFailed

from . import _common as c

SOURCE = "mcp-memory-service"
DEFAULT_FILE = "sqlite_vec.db"

_DECISION = frozenset({"decision", "architecture", "tool_choice", "approach", "configuration"})
_ERROR = frozenset({"error", "bug", "failure", "exception", "timeout", "mistake"})
_TODO = frozenset({"action_item", "follow_up", "backlog_item", "retrospective_action"})
_PLAN = frozenset({"planning", "sprint_goal", "milestone", "deliverable", "deadline"})
_TRIED = frozenset({"learning", "insight", "gotcha", "anti_pattern", "best_practice"})
_OPTIONAL = ("deleted_at", "store", "parent_id", "version", "superseded_by")
NO_REASON = "not recorded in mcp-memory-service"


def read(path: Path) -> list[dict[str, Any]]:
    """save_session arguments for every live memory in the store at `path`, in a stable order
    (oldest memory first, each memory's versions oldest first)."""
    chains = _chains(_join_chunks(_rows(_database(path))))
    out: list[dict[str, Any]] = []
    for chain in sorted(chains, key=lambda ch: (ch[0]["created_at"] or 0.0, ch[0]["content_hash"])):
        if chain[-1]["deleted_at"] is not None:
            continue  # deleted in the service: none of its versions comes back
        root = chain[0]
        store = root["store"] if root["store"] not in (None, "", "default") else ""
        session = c.name("mcp-memory", store, f"{c.slug(root['content'])}-{root['content_hash'][:8]}")
        previous_reason = ""
        for row in chain:
            if row["deleted_at"] is None:
                out.append(_record(session, row, previous_reason))
            previous_reason = str(_metadata(row).get("evolution_reason") or "")
    return out


def _database(path: Path) -> Path:
    path = path.expanduser()
    if path.is_dir():
        path = path / DEFAULT_FILE
    if not path.is_file():
        raise ValidationFailed(
            f"no mcp-memory-service database at {path} (give its {DEFAULT_FILE}, or the folder holding it)"
        )
    return path


def _rows(db: Path) -> list[dict[str, Any]]:
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ValidationFailed(f"{db} cannot be opened as SQLite: {exc}") from None
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}
        if not {"content_hash", "content"} <= columns:
            raise ValidationFailed(f"{db} is not an mcp-memory-service database (no memories table)")
        wanted = [
            "content_hash",
            "content",
            "tags",
            "memory_type",
            "metadata",
            "created_at",
            "created_at_iso",
        ]
        wanted += [col for col in _OPTIONAL if col in columns]
        select = ", ".join(col if col in columns else f"NULL AS {col}" for col in wanted)
        cursor = conn.execute(f"SELECT {select} FROM memories ORDER BY created_at, rowid")
        names = [d[0] for d in cursor.description]
        budget = c.Budget()
        rows: list[dict[str, Any]] = []
        for row in cursor:  # streamed: a store over the caps is refused before it is all in memory
            budget.take(_size(row), f"memory {len(rows) + 1} of {db}")
            rows.append(dict(zip(names, row, strict=True)))
    except sqlite3.DatabaseError as exc:
        raise ValidationFailed(f"{db} cannot be read as an mcp-memory-service database: {exc}") from None
    finally:
        conn.close()
    for row in rows:
        for col in _OPTIONAL:
            row.setdefault(col, None)
        row["content"] = str(row["content"] or "")
    return rows


def _size(row: tuple[Any, ...]) -> int:
    """What a row weighs against the import's caps: its text and blob columns, in bytes."""
    return sum(
        len(v.encode("utf-8", "surrogatepass")) if isinstance(v, str) else len(v)
        for v in row
        if isinstance(v, str | bytes)
    )


def _metadata(row: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(row["metadata"] or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _join_chunks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A memory the service split into chunks (metadata original_hash, chunk_index) as one row
    again, its text rejoined without the chunks' overlap."""
    chunks: dict[str, list[dict[str, Any]]] = defaultdict(list)
    whole: list[dict[str, Any]] = []
    for row in rows:
        meta = _metadata(row)
        if isinstance(meta.get("original_hash"), str) and isinstance(meta.get("chunk_index"), int):
            chunks[meta["original_hash"]].append(row)
        else:
            whole.append(row)
    for original, parts in chunks.items():
        parts.sort(key=lambda r: int(_metadata(r)["chunk_index"]))
        text = parts[0]["content"]
        for part in parts[1:]:
            text = _overlap_join(text, part["content"])
        alive = [p for p in parts if p["deleted_at"] is None]
        whole.append(
            {**parts[0], "content": text, "content_hash": original, "deleted_at": None if alive else 1}
        )
    return sorted(whole, key=lambda r: (r["created_at"] or 0.0, r["content_hash"]))


def _overlap_join(head: str, tail: str) -> str:
    """`head` + `tail` where tail starts with the end of head (the service overlaps chunks)."""
    for k in range(min(len(head), len(tail), 1000), 7, -1):
        if head.endswith(tail[:k]):
            return head + tail[k:]
    return head + " " + tail


def _chains(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Rows grouped by lineage (parent_id), each chain oldest first. A parent that is not in the
    table (purged) starts the chain at its first surviving child."""
    present = {r["content_hash"] for r in rows}
    children: dict[str, list[dict[str, Any]]] = defaultdict(list)
    roots: list[dict[str, Any]] = []
    for row in rows:
        parent = row["parent_id"]
        if parent and parent in present and parent != row["content_hash"]:
            children[parent].append(row)
        else:
            roots.append(row)
    chains: list[list[dict[str, Any]]] = []
    seen: set[str] = set()
    for root in roots:
        chain: list[dict[str, Any]] = []
        node: dict[str, Any] | None = root
        while node is not None and node["content_hash"] not in seen:
            seen.add(node["content_hash"])
            chain.append(node)
            # A fork (two children) is not something the service makes; follow the newest.
            kids = sorted(
                children.get(node["content_hash"], []),
                key=lambda r: (r["version"] or 0, r["created_at"] or 0.0),
            )
            node = kids[-1] if kids else None
        chains.append(chain)
    return chains


def _record(session: str, row: dict[str, Any], changed_because: str) -> dict[str, Any]:
    where = f"mcp-memory-service (memory {row['content_hash'][:12]})"
    text = row["content"].strip()
    kind = str(row["memory_type"] or "").strip().lower()
    tags = [t.strip() for t in str(row["tags"] or "").split(",") if t.strip()]
    tail = []
    if tags:
        tail.append("Tags: " + ", ".join(tags))
    if kind:
        tail.append(f"Type: {kind}")
    saved = _when(row)
    if saved:
        tail.append(f"Saved in mcp-memory-service: {saved}")
    if changed_because:
        tail.append(f"Changed from the previous version because: {changed_because}")
    args = c.record(session, c.summary(text, tail, where, session), SOURCE)
    if kind in _DECISION:
        decision, _, reason = text.partition(" because ")
        if not reason.strip():
            decision, reason = text, str(_metadata(row).get("reason") or NO_REASON)
        args["decisions"] = c.decisions([(decision, reason)], where)
    for field, kinds in (("errors", _ERROR), ("todos", _TODO), ("plan", _PLAN), ("tried", _TRIED)):
        if kind in kinds:
            args[field] = c.items([text], where)
    return args


def _when(row: dict[str, Any]) -> str:
    iso = str(row["created_at_iso"] or "")
    if iso:
        return iso[:19].replace("T", " ") + " UTC" if iso.endswith("Z") else iso
    if isinstance(row["created_at"], int | float):
        return datetime.fromtimestamp(row["created_at"], UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return ""
