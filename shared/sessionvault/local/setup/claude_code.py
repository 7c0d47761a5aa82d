"""What Claude Code itself records about a project's `.mcp.json` server, read only: the projects
it knows and whether the user approved our server in each.

Claude Code does not use a server from a project's `.mcp.json` until the user approves it
(`claude mcp list` says "Pending approval"; a server the client cannot use is a handoff that
silently never happens, so `doctor` and `connect` say it). The record of that choice
(code.claude.com/docs/en/settings; docs/clients.md):
- `~/.claude.json` keeps one entry per folder `claude` was started in (`projects`, keyed by the
  absolute path), with `enabledMcpjsonServers` / `disabledMcpjsonServers` (the answer to the
  prompt), `enableAllProjectMcpServers`, and `hasTrustDialogAccepted`;
- the same three settings in `~/.claude/settings.json`, and in the project's own
  `.claude/settings.json` and `.claude/settings.local.json`, which count only in a folder the
  user has trusted (else a cloned repository could approve its own servers).
A rejection anywhere wins over an approval. `claude mcp add` writes elsewhere, and needs no
approval: the user scope (`--scope user`) is `mcpServers` at the top of `~/.claude.json`, the
local scope (its default) is `mcpServers` in the folder's `projects` entry (read from files a real
`claude mcp add` wrote, tests/fixtures/claude_code/). Nothing here writes to these files: approving a
server is the user's decision, and `~/.claude.json` is Claude Code's own state, rewritten by
every running `claude`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sessionvault.names import SERVER_NAME

STATE = ".claude.json"  # in the home folder
MCP_JSON = ".mcp.json"
MAX_PROJECTS = 200  # folders looked at: ~/.claude.json keeps every folder claude ever started in

Approval = Literal["approved", "rejected", "pending"]


@dataclass(frozen=True)
class Project:
    folder: Path  # where `claude` starts: the key its approval is recorded under
    mcp_json: Path  # the `.mcp.json` (in the folder or a parent) that holds our entry
    entry: Mapping[str, Any]
    approval: Approval


def _json(path: Path) -> dict[str, Any]:
    """The file's JSON object; {} when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def known(home: Path) -> dict[Path, dict[str, Any]]:
    """The folders Claude Code has been started in (`projects` in ~/.claude.json), each with
    what it recorded there."""
    projects = _json(home / STATE).get("projects")
    if not isinstance(projects, dict):
        return {}
    return {Path(k): v for k, v in projects.items() if isinstance(v, dict) and Path(k).is_absolute()}


@dataclass(frozen=True)
class Added:
    """An entry `claude mcp add` wrote: in the user scope (`folder` None, every folder) or in
    the local scope of one folder."""

    folder: Path | None
    entry: Mapping[str, Any]

    @property
    def scope(self) -> str:
        return "user" if self.folder is None else "local"


def _our_entry(servers: Any) -> Mapping[str, Any] | None:
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    return entry if isinstance(entry, dict) else None


def added(home: Path) -> list[Added]:
    """Our server as `claude mcp add` recorded it in ~/.claude.json: the user scope first, then
    each folder's local scope (which Claude Code prefers there to the project and user ones)."""
    user = _our_entry(_json(home / STATE).get("mcpServers"))
    found = [Added(None, user)] if user is not None else []
    for folder, recorded in list(known(home).items())[:MAX_PROJECTS]:
        entry = _our_entry(recorded.get("mcpServers"))
        if entry is not None:
            found.append(Added(folder, entry))
    return found


def _listed(source: Mapping[str, Any], key: str, name: str) -> bool:
    values = source.get(key)
    return isinstance(values, list) and name in values


def approval(
    folder: Path, home: Path, projects: Mapping[Path, Mapping[str, Any]], name: str = SERVER_NAME
) -> Approval:
    """Whether Claude Code started in `folder` uses the `.mcp.json` server `name`."""
    recorded = projects.get(folder) or projects.get(folder.resolve()) or {}
    sources = [recorded, _json(home / ".claude" / "settings.json")]
    if recorded.get("hasTrustDialogAccepted") is True:
        sources += [
            _json(folder / ".claude" / "settings.json"),
            _json(folder / ".claude" / "settings.local.json"),
        ]
    if any(_listed(s, "disabledMcpjsonServers", name) for s in sources):
        return "rejected"
    if any(
        s.get("enableAllProjectMcpServers") is True or _listed(s, "enabledMcpjsonServers", name)
        for s in sources
    ):
        return "approved"
    return "pending"


def _ours(folder: Path, stop: Path) -> tuple[Path, Mapping[str, Any]] | None:
    """The nearest `.mcp.json` from `folder` up (Claude Code reads the folder's and its
    parents'), not above `stop`, whose `mcpServers` holds our entry."""
    for place in (folder, *folder.parents):
        entry = _our_entry(_json(place / MCP_JSON).get("mcpServers"))
        if entry is not None:
            return place / MCP_JSON, entry
        if place == stop or place == place.parent:
            return None
    return None


def projects(home: Path, also: Iterable[Path] = ()) -> list[Project]:
    """Every folder Claude Code knows (and `also`, e.g. the project of the current folder)
    whose `.mcp.json` holds our server, with whether it is approved there."""
    recorded = known(home)
    folders = list(dict.fromkeys([*also, *list(recorded)[:MAX_PROJECTS]]))
    found = []
    for folder in folders:
        ours = _ours(folder, home if folder.is_relative_to(home) else Path(folder.anchor))
        if ours is not None:
            found.append(Project(folder, ours[0], ours[1], approval(folder, home, recorded)))
    return found


def what_to_do(folder: Path, state: Approval) -> str:
    """The one step that makes Claude Code, started in `folder`, use the server."""
    if state == "rejected":
        return (
            f"cd {folder} && claude mcp reset-project-choices; then start claude there"
            ' and choose "Use this MCP server"'
        )
    return f'cd {folder} && claude, and choose "Use this MCP server" (or approve it in /mcp)'
