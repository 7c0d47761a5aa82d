"""GitHub Copilot CLI's own session, read into a `Transcript` (client "copilot-cli").

Where it is (Copilot CLI 1.0.102; fixture: tests/fixtures/transcripts/copilot-cli-1.0.102):
`~/.copilot/session-state/<session id>/`, holding
- `events.jsonl`: the session as events, one JSON object a line, each `{"type", "data", "id",
  "timestamp", "parentId"}`. Its Stop and PreCompact hooks name this file (`transcript_path`);
- `workspace.yaml`: the session's `cwd` (what `locate` matches a folder by);
- `session.db`: SQLite, the agent's task list: the `todos` table (`title`, `status` one of
  pending, in_progress, done, blocked) that its `sql` tool writes with SQL of the model's own.
  The table as it stands is the task list, so it is read, not the SQL in the events.

The events read here:
- `session.start`: `data.sessionId`, `data.context.cwd`;
- `user.message`: `data.content`, the prompt as typed;
- `assistant.message`: `data.content` (the reply's text) and `data.toolRequests`
  (`toolCallId`, `name`, `arguments`); a sub-agent's carry `parentToolCallId` and are left out;
- `tool.execution_complete`: `toolCallId`, `success`, `fileEdits` (`path`, `kind`),
  `shellExecution.exitCode` (a shell command that exits non-zero is still `success: true`),
  `result.content` (ending in a `<shellId: N completed with exit code N>` line of its own),
  `error.message` for a call that failed;
- `session.compaction_complete`: `data.summaryContent`, the compaction's summary.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from .gemini import SAFE_ID
from .shell import failure
from .transcript import KEEP, PENDING, Capped, Transcript, json_lines, newest

CLIENT = "copilot-cli"
FILE_TOOLS = frozenset({"create", "edit"})  # each takes an absolute `path`
SHELL_TOOLS = frozenset({"bash"})
_SHELL_LINE = re.compile(r"^<shellId: .*>$")
_STATUS = {"done": "completed", "blocked": "pending"}  # Copilot's states in the Transcript's words
DB_TIMEOUT_S = 0.5  # a session.db the running client holds locked is skipped, not waited on


def read(path: Path) -> Transcript:
    """The facts of the session whose `events.jsonl` is `path` (and whose task list is the
    `session.db` beside it); a torn or unknown line is skipped."""
    reader = _Reader(Transcript(CLIENT))
    for event in json_lines(path):
        reader.add(event)
    todos = task_list(path.parent / "session.db")
    if todos:
        reader.transcript.set_todos(todos)
    return reader.transcript


def task_list(db: Path) -> list[tuple[str, str]]:
    """The `todos` table of a session's database, oldest first (the newest KEEP), read only;
    [] when there is none or it cannot be read."""
    if not db.is_file():
        return []
    query = "SELECT title, status FROM todos ORDER BY rowid DESC LIMIT ?"
    try:
        uri = f"{db.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=DB_TIMEOUT_S)) as con:
            rows = con.execute(query, (KEEP,)).fetchall()
    except sqlite3.Error:
        return []
    items = [(str(title).strip(), _STATUS.get(str(status), str(status))) for title, status in reversed(rows)]
    return [(title, status) for title, status in items if title]


class _Reader:
    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.calls: Capped[str, tuple[str, dict[str, Any]]] = Capped(PENDING)  # id -> (name, args)

    def add(self, event: dict[str, Any]) -> None:
        kind, data = event.get("type"), event.get("data")
        if not isinstance(data, dict):
            return
        if kind == "session.start":
            self.started(data)
        elif kind == "user.message" and isinstance(data.get("content"), str) and data["content"].strip():
            self.transcript.asks.append(data["content"].strip())
        elif kind == "assistant.message" and not data.get("parentToolCallId"):
            self.answered(data)
        elif kind == "tool.execution_complete" and isinstance(data.get("toolCallId"), str):
            self.finished(data)
        elif kind == "session.compaction_complete" and data.get("success", True):
            summary = data.get("summaryContent")
            if isinstance(summary, str) and summary.strip():
                self.transcript.compact_summary = summary.strip()

    def started(self, data: dict[str, Any]) -> None:
        if isinstance(data.get("sessionId"), str):
            self.transcript.session_id = data["sessionId"]
        context = data.get("context")
        if isinstance(context, dict) and isinstance(context.get("cwd"), str) and not self.transcript.cwd:
            self.transcript.cwd = context["cwd"]

    def answered(self, data: dict[str, Any]) -> None:
        text = data.get("content")
        if isinstance(text, str) and text.strip():
            self.transcript.last_message = text.strip()
        for request in data.get("toolRequests") or []:
            if isinstance(request, dict) and isinstance(request.get("toolCallId"), str):
                given = request.get("arguments")
                self.calls[request["toolCallId"]] = (
                    str(request.get("name", "")),
                    given if isinstance(given, dict) else {},
                )

    def finished(self, data: dict[str, Any]) -> None:
        name, given = self.calls.pop(data["toolCallId"], ("", {}))
        shell = data.get("shellExecution")
        code = shell.get("exitCode") if isinstance(shell, dict) else None
        if name in SHELL_TOOLS and (not data.get("success") or (isinstance(code, int) and code != 0)):
            self.transcript.failures.append(failure(str(given.get("command", "")), _output(data)))
            return
        if not data.get("success"):
            return  # an edit that failed changed nothing
        edits = [e.get("path") for e in data.get("fileEdits") or [] if isinstance(e, dict)]
        if not edits and name in FILE_TOOLS:
            edits = [given.get("path")]
        for path in edits:
            if isinstance(path, str) and path:
                self.transcript.touch(path)


def _output(data: dict[str, Any]) -> list[str]:
    """What a failed shell call printed, without Copilot's own `<shellId: ...>` line."""
    result, error = data.get("result"), data.get("error")
    text = result.get("content") if isinstance(result, dict) else None
    if not isinstance(text, str) and isinstance(error, dict):
        text = error.get("message")
    lines = str(text or "").splitlines()
    return [line for line in lines if not _SHELL_LINE.match(line.strip())]


def session_folder(home: Path) -> Path:
    return home / ".copilot" / "session-state"


def locate(home: Path, cwd: Path, session_id: str = "") -> Path | None:
    """The `events.jsonl` of `session_id`, or else the newest of a session started in `cwd`
    (its workspace.yaml's `cwd`); None when there is none."""
    folder = session_folder(home)
    if session_id:
        found = folder / session_id / "events.jsonl"
        return found if SAFE_ID.fullmatch(session_id) and found.is_file() else None
    mine = str(cwd)
    candidates = [
        events
        for events in folder.glob("*/events.jsonl")
        if events.is_file() and _workspace_cwd(events.parent / "workspace.yaml") == mine
    ]
    return newest(candidates)


def _workspace_cwd(path: Path) -> str:
    """The `cwd:` line of a workspace.yaml (one flat mapping; no YAML parser needed for it)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("cwd: "):
                    return line[5:].strip().strip("'\"")
    except OSError:
        return ""
    return ""
