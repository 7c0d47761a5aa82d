"""What a client's own session file says, in one shape for every client.

Each client's reader (`claude_code`, `codex`, `gemini`, `qwen`, `opencode`) streams its client's
native file and fills a `Transcript`. Readers never load a whole file: a 50 MB transcript is read
line by line (or event by event) and only the most recent entries of each list are kept, so the
hook's memory is bounded whatever the session's length. Readers never raise on a malformed line:
a client killed mid-write leaves a torn last line, and the hook must still save what is there."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEEP = 50  # most recent entries kept per list while streaming; the record caps come later
MAX_LINE = 4_000_000  # a longer JSONL line (a huge tool output) is skipped, not parsed


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

    def touch(self, path: str) -> None:
        """A file created or edited: kept once, most recently touched last."""
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


def json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """Each JSON object of a JSONL file, streamed; torn, oversized or non-object lines skipped.
    At most MAX_LINE bytes are held at a time, however long a line is."""
    with path.open("rb") as handle:
        while raw := handle.readline(MAX_LINE):
            if len(raw) == MAX_LINE and not raw.endswith(b"\n"):
                while (rest := handle.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass  # the rest of an oversized line
                continue
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict):
                yield value
