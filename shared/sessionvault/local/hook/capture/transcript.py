"""What a client's own session file says, in one shape for every client, and what every reader
does the same way whatever the client.

Each client's reader (`claude_code`, `codex`, `gemini`, `qwen`, `opencode`) streams its client's
native file and fills a `Transcript`. Readers never load a whole file: a 50 MB transcript is read
line by line (or event by event) and only the most recent entries of each list are kept, so the
hook's memory is bounded whatever the session's length. Readers never raise on a malformed line:
a client killed mid-write leaves a torn last line, and the hook must still save what is there.
A failed command's entry is `shell.failure`'s, for every reader."""

from __future__ import annotations

import json
import os
import re
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from . import private

KEEP = 50  # most recent entries kept per list while streaming; the record caps come later
MAX_LINE = 4_000_000  # a longer JSONL line (a huge tool output) is skipped, not parsed
PENDING = 200  # tool calls held while awaiting their result; more only if results went missing
_PATCHED = re.compile(r"^\*\*\* (?:Add File|Update File|Move to): (.+)$", re.MULTILINE)

K = TypeVar("K")
V = TypeVar("V")


@dataclass
class Transcript:
    """The facts a checkpoint is built from, oldest first in every list."""

    client: str
    session_id: str = ""
    cwd: str = ""
    asks: deque[str] = field(default_factory=lambda: deque(maxlen=KEEP))  # what the user asked
    # The client's own task list, as it last stood: task text -> status ("pending",
    # "in_progress", "completed"); insertion order is the order the tasks were made.
    todos: dict[str, str] = field(default_factory=dict)
    files: deque[str] = field(default_factory=lambda: deque(maxlen=KEEP))  # created or edited
    failures: deque[str] = field(default_factory=lambda: deque(maxlen=KEEP))  # "cmd: error line"
    last_message: str = ""  # the last assistant message
    compact_summary: str = ""  # the client's own compaction summary, where it writes one
    # Lines of private files a tool call read (private.py): withheld wherever they reappear.
    withheld: set[str] = field(default_factory=set)

    def is_private(self, path: str) -> bool:
        """Whether `path` is a private file for this session's repo (private.py)."""
        return private.matcher(private.patterns_for(self.cwd))(path)

    def output_of(self, named: str, output: str) -> None:
        """What a tool call that read `named` (a path, a command) printed: when that names a
        private file, its lines are withheld wherever they reappear."""
        if private.names_private(named, self.is_private):
            self.read_private(output)

    def read_private(self, output: str) -> None:
        """What a tool call printed of a private file: never kept, and withheld elsewhere."""
        for line in private.lines_of(output):
            if len(self.withheld) < private.MAX_WITHHELD:
                self.withheld.add(line)

    def touch(self, path: str) -> None:
        """A file created or edited, named relative to the session's folder when inside it:
        kept once, most recently touched last."""
        path = relative(path, self.cwd)
        if path in self.files:
            self.files.remove(path)
        self.files.append(path)

    def set_todos(self, items: list[tuple[str, str]]) -> None:
        """A whole task list (TodoWrite, a plan tool): replaces what was there."""
        self.todos = dict(items[-KEEP:])

    def set_todo(self, text: str, status: str) -> None:
        """One task created or updated (TaskCreate / TaskUpdate)."""
        self.todos.pop(text, None)
        self.todos[text] = status
        while len(self.todos) > KEEP:
            self.todos.pop(next(iter(self.todos)))


class Capped(OrderedDict[K, V]):
    """A dict that forgets its oldest entries past `limit`: what a reader holds while pairing
    a tool call with its result stays bounded however many results never come."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        while len(self) > self.limit:
            self.popitem(last=False)


def json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """Each JSON object of a JSONL file, streamed; torn, oversized or non-object lines skipped.
    At most MAX_LINE bytes are held at a time, however long a line is."""
    with path.open("rb") as handle:
        while raw := handle.readline(MAX_LINE):
            if len(raw) == MAX_LINE and not raw.endswith(b"\n"):
                while (rest := handle.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass  # the rest of an oversized line
                continue
            value = json_value(raw)
            if isinstance(value, dict):
                yield value


def json_value(raw: str | bytes) -> Any:
    """`raw` parsed as JSON; None when it is not JSON (torn, or nested past Python's limit)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def relative(path: str, cwd: str) -> str:
    """`path` relative to `cwd` when it lies inside it, else as it was given (a relative path is
    kept as the client wrote it: there is no telling what it was relative to)."""
    if not cwd or not os.path.isabs(path) or not os.path.isabs(cwd):
        return path
    inside = os.path.relpath(path, cwd)
    return path if inside == ".." or inside.startswith("../") else inside


def todo_items(todos: list[Any], *keys: str) -> list[tuple[str, str]]:
    """A client's task list, [{<text>: ..., "status": ...}], as (text, status) pairs: the text is
    under the first of `keys` a task has a string for. A task without text is left out; one
    without a status is "pending" (a task is made before it is started)."""
    items = []
    for todo in todos:
        if not isinstance(todo, dict):
            continue
        text = next((todo[k].strip() for k in keys if isinstance(todo.get(k), str)), "")
        if text:
            items.append((text, str(todo.get("status") or "pending")))
    return items


def patched_files(envelope: str) -> list[str]:
    """The files an apply_patch envelope adds, updates or moves to: Codex and OpenCode both
    take this envelope (`*** Add File: <path>`, `*** Update File: <path>`, `*** Move to: <path>`)."""
    return [name.strip() for name in _PATCHED.findall(envelope)]


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut. Scrub first (`scrubbed`):
    a key cut short keeps its secret part, and no pattern knows it any more."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cut(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, without the word the limit falls in: what is held
    back before scrubbing (to bound its cost) must not end in part of a key."""
    if len(text) <= limit:
        return text
    if text[limit].isspace():
        return text[:limit]
    head = text[:limit]
    end = max(head.rfind(c) for c in " \t\n")
    return head[:end] if end > 0 else ""


def scrubbed(text: str, keep: int) -> str:
    """`text` as a checkpoint may hold it, at most `keep` characters: `<private>` spans out,
    secrets out (the server's scrubber, core/redact.py), and only then clipped. At most
    4 * `keep` characters are scrubbed (a 1 MB reply costs what a 16 kB one does): cut at a
    word boundary, so no key is scrubbed half."""
    from sessionvault.core.redact import scrub_text  # detect-secrets: only when capturing

    return clip(scrub_text(cut(private.without_spans(text), 4 * keep))[0], keep)


def newest(paths: Iterable[Path]) -> Path | None:
    """The most recently written of `paths` (of two written together, the later name), or None."""
    return max(paths, key=written, default=None)


def written(path: Path) -> tuple[float, str]:
    """When `path` was last written, as a sort key: a file gone since it was listed is oldest."""
    try:
        return path.stat().st_mtime, path.name
    except OSError:
        return 0.0, path.name
