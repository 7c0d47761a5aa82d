"""A client's instructions file, CLAUDE.md (Claude Code), AGENTS.md (Codex and the clients that
read it) or GEMINI.md (Gemini CLI), as one session each. PATH is one file, or a folder searched
for the kind's files (dot-folders, node_modules and virtualenvs skipped, but for the client's
own folder: .claude/CLAUDE.md, .gemini/GEMINI.md).

The mapping (docs/backup.md says the same to users):
- name: `instructions/<repo>/<path of the file in the repo>` inside a git checkout (the repo as
  every client names it: local/hook/repo.py), else `instructions/<path>` (`~/` for the home folder);
- summary: the file's text, then where it came from; cut at 4,000 characters with a marker
  naming the file;
- todos: its open task boxes (`- [ ] text`);
- files: the file itself (its path in the repo);
- repo: the checkout's repo, none outside git; client: claude-code, codex or gemini.
Dropped: nothing else is read; files it imports (`@path` lines) are not followed.
Read: regular files inside the folder given (a link is followed only to one inside it), 1 MB a
file, 50 MB and 10,000 files an import (_common.Budget).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sessionvault.errors import ValidationFailed

from . import _common as c

# source -> (the client that reads the file, the names it reads, its own dot-folder)
KINDS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "claude-md": ("claude-code", ("CLAUDE.md", "CLAUDE.local.md"), ".claude"),
    "agents-md": ("codex", ("AGENTS.md", "AGENTS.override.md"), ".codex"),
    "gemini-md": ("gemini", ("GEMINI.md",), ".gemini"),
}
MAX_DEPTH = 8
_SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages"})
_TASK = re.compile(r"^\s*[-*+]\s+\[ \]\s+(?P<text>.+)$")


def reader(source: str) -> Callable[[Path], list[dict[str, Any]]]:
    client, names, own = KINDS[source]

    def read(path: Path) -> list[dict[str, Any]]:
        path = path.expanduser()
        if path.is_file():
            root, files = path.parent.resolve(), [path.parent.resolve() / path.name]
        elif path.is_dir():
            root = path.resolve()
            files = _find(root, names, own, 0)
        else:
            raise ValidationFailed(f"no {names[0]} at {path} (give the file, or a folder to search)")
        budget = c.Budget()
        # A link is followed only to a regular file inside the folder (CLAUDE.md -> AGENTS.md, as
        # people keep them): never out of it.
        return [_file(c.read_inside(file, root, budget, links=True), file, client) for file in files]

    read.__doc__ = f"save_session arguments for each {' or '.join(names)} at or under `path`."
    return read


def _find(folder: Path, names: tuple[str, ...], own: str, depth: int) -> list[Path]:
    found: list[Path] = []
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError:
        return found
    for entry in entries:
        if entry.is_file() and entry.name in names:
            found.append(entry)
        elif (
            entry.is_dir()
            and not entry.is_symlink()
            and depth < MAX_DEPTH
            and (entry.name == own or not entry.name.startswith("."))
            and entry.name not in _SKIP_DIRS
            and not (entry / "pyvenv.cfg").exists()
        ):
            found += _find(entry, names, own, depth + 1)
    return found


def _file(text: str, file: Path, client: str) -> dict[str, Any]:
    top = _checkout(file.parent)
    if top is not None:
        from sessionvault.local.hook.repo import current_repo  # runs git: only for a file in a checkout

        repo, shown = current_repo(top), file.resolve().relative_to(top).as_posix()
        session = c.name("instructions", repo, shown)
    else:
        repo, shown = "", _display(file)
        session = c.name("instructions", shown)
    summary = c.summary(text, [f"From {shown}" + (f" in {repo}" if repo else "")], str(file), shown)
    todos = [m["text"] for m in map(_TASK.match, text.splitlines()) if m]
    return c.record(
        session, summary, client, repo=repo, todos=c.items(todos, str(file)), files=c.items([shown])
    )


def _checkout(folder: Path) -> Path | None:
    """The top of the git checkout holding `folder` (a `.git` folder or file), if any."""
    here = folder.resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _display(file: Path) -> str:
    resolved, home = file.resolve(), Path.home().resolve()
    if resolved.is_relative_to(home):
        return "~/" + resolved.relative_to(home).as_posix()
    return resolved.as_posix()
