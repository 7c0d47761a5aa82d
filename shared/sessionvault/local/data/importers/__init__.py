"""Importers for what people already have: another memory tool's store, or a client's
instructions file, read into save_session arguments (`sessionvault import SOURCE PATH`).

Each importer is pure: a path in, a list of save_session arguments out (name, summary, repo,
plan, decisions, todos, files, errors, tried, client; within core/records.py's caps), nothing
saved, nothing sent. The same input gives the same list in the same order, so a second import
of unchanged data adds no version; a session listed more than once holds its versions, oldest
first. Each module's docstring states its mapping (and docs/backup.md, for users).

Importing this package is cheap (no pydantic, no YAML, no git until an importer runs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import basic_memory, instructions, mcp_memory_service

Importer = Callable[[Path], list[dict[str, Any]]]

IMPORTERS: dict[str, Importer] = {
    "mcp-memory-service": mcp_memory_service.read,
    "basic-memory": basic_memory.read,
    "claude-md": instructions.reader("claude-md"),
    "agents-md": instructions.reader("agents-md"),
    "gemini-md": instructions.reader("gemini-md"),
}

__all__ = ["IMPORTERS", "Importer"]
