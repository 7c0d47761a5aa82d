"""Claude Code's own session transcript, read without any model.

Claude Code appends one JSON object a line to `~/.claude/projects/<escaped cwd>/<session
id>.jsonl`. Most lines are bookkeeping (attachments, API request shapes, costs); the ones read
here are `user` and `assistant` entries. An assistant entry holds one content block (text or a
`tool_use`); the `tool_result` answering a tool call comes in a later user entry with the same
id, and only then is it known whether the call worked, so a call is counted at its result. A
compaction writes a user entry marked `isCompactSummary` holding the summary.

The shapes below are those of Claude Code 2.1.332 (tests/fixtures/transcripts/claude-code-2.1.332).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .shell import MAX_FAILURE as MAX_FAILURE
from .shell import failure
from .transcript import KEEP, PENDING, Capped, Transcript, json_lines, newest, todo_items

CLIENT = "claude-code"
FILE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
# What Claude Code itself writes as a user entry: slash commands and their output, shell-mode
# input, reminders. Not something the user asked.
_NOT_ASKS = (
    "<command-name>",
    "<command-message>",
    "<local-command-",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<system-reminder>",
    "<task-notification>",
    "<user-prompt-submit-hook>",
    "Caveat: ",
    "[Request interrupted",
)
_EXIT_CODE = re.compile(r"^(Error: )?Exit code \d+$")
_TAG = re.compile(r"</?[a-z_-]+>")
_SUMMARY = re.compile(r"\nSummary:\n(.*?)(?:\n\nIf you need specific details|\Z)", re.S)
_CREATED_TASK = re.compile(r"Task #(\S+) created")


def read(path: Path) -> Transcript:
    """What the transcript at `path` says; a torn or unknown line is skipped."""
    reader = _Reader(Transcript(client=CLIENT))
    for entry in json_lines(path):
        reader.entry(entry)
    return reader.transcript


def locate(home: Path, cwd: Path, session_id: str = "", config: Path | None = None) -> Path | None:
    """The transcript of `session_id` (or, without one, the newest) for a session started in
    `cwd`, or None. A hook gets the exact path as `transcript_path` in its input
    (https://code.claude.com/docs/en/hooks#common-input-fields): prefer that; this is for a
    caller without one. Transcripts are application data under ~/.claude, or under
    $CLAUDE_CONFIG_DIR when that is set: pass it as `config`
    (https://code.claude.com/docs/en/claude-directory).

    The folder under projects/ is the launch folder (not its git root) with every character
    outside [a-zA-Z0-9] made "-"; past 200 characters Claude Code 2.1.332 keeps the first 200
    and appends "-" and a hash of the path, matched here by prefix rather than recomputed."""
    projects = (config or home / ".claude") / "projects"
    name = re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))
    folders = [projects / name] if len(name) <= 200 else sorted(projects.glob(f"{name[:200]}-*"))
    found = [f for folder in folders for f in _transcripts(folder, session_id)]
    return newest(found)


def _transcripts(folder: Path, session_id: str) -> list[Path]:
    if session_id:
        exact = folder / f"{session_id}.jsonl"
        return [exact] if exact.is_file() else []
    return [f for f in folder.glob("*.jsonl") if f.is_file()] if folder.is_dir() else []


class _Reader:
    """Fills one Transcript, entry by entry; keeps only what pairs calls with results."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.pending: Capped[str, tuple[str, dict[str, Any]]] = Capped(PENDING)  # id -> call
        self.tasks: Capped[str, str] = Capped(KEEP * 4)  # TaskCreate's task id -> subject

    def entry(self, entry: dict[str, Any]) -> None:
        kind = entry.get("type")
        if kind not in ("user", "assistant") or not isinstance(entry.get("message"), dict):
            return
        self._ids(entry)
        content = entry["message"].get("content")
        if kind == "assistant":
            self._assistant(entry, content)
        elif entry.get("isCompactSummary"):
            self._compact(content)
        elif isinstance(content, list) and any(_is(b, "tool_result") for b in content):
            for block in content:
                if _is(block, "tool_result"):
                    self._result(block, entry.get("toolUseResult"))
        elif not any(entry.get(flag) for flag in ("isMeta", "isSidechain", "isVisibleInTranscriptOnly")):
            self._ask(_text(content))

    def _ids(self, entry: dict[str, Any]) -> None:
        # The first cwd is where the session started (entries follow a later `cd`); the session
        # id is the one last written, the file's own.
        if not self.transcript.cwd and isinstance(entry.get("cwd"), str):
            self.transcript.cwd = entry["cwd"]
        if isinstance(entry.get("sessionId"), str):
            self.transcript.session_id = entry["sessionId"]

    def _assistant(self, entry: dict[str, Any], content: Any) -> None:
        for block in content if isinstance(content, list) else []:
            if _is(block, "tool_use") and isinstance(block.get("id"), str):
                given = block.get("input")
                self.pending[block["id"]] = (
                    str(block.get("name", "")),
                    given if isinstance(given, dict) else {},
                )
            elif _is(block, "text") and not entry.get("isApiErrorMessage") and not entry.get("isSidechain"):
                text = str(block.get("text", "")).strip()  # an API error text is Claude Code's own
                if text:
                    self.transcript.last_message = text

    def _ask(self, text: str) -> None:
        text = text.strip()
        if text and not text.startswith(_NOT_ASKS):
            self.transcript.asks.append(text)

    def _compact(self, content: Any) -> None:
        text = _text(content)
        found = _SUMMARY.search(text)
        self.transcript.compact_summary = (found.group(1) if found else text).strip()

    def _result(self, block: dict[str, Any], extra: Any) -> None:
        name, given = self.pending.pop(str(block.get("tool_use_id")), ("", {}))
        failed = bool(block.get("is_error"))
        if name in ("Read", "Bash"):  # `cat .env`, a Read of a key: withheld if repeated
            self.transcript.output_of(
                str(given.get("file_path") or given.get("command") or ""), _text(block.get("content"))
            )
        if name == "Bash" and failed:
            output = _output_lines(_text(block.get("content")))
            self.transcript.failures.append(failure(str(given.get("command", "")), output))
        elif failed:
            return  # an edit that failed changed nothing; a task call that failed made nothing
        elif name in FILE_TOOLS and isinstance(given.get(FILE_TOOLS[name]), str):
            self.transcript.touch(given[FILE_TOOLS[name]])
        elif name == "TodoWrite" and isinstance(given.get("todos"), list):
            self.transcript.set_todos(todo_items(given["todos"], "content"))
        elif name == "TaskCreate":
            self._task_created(given, extra, _text(block.get("content")))
        elif name == "TaskUpdate":
            self._task_updated(given)

    def _task_created(self, given: dict[str, Any], extra: Any, reply: str) -> None:
        # The new task's id is in the result (toolUseResult.task.id, or the reply's "Task #N").
        task = extra.get("task") if isinstance(extra, dict) else None
        found = _CREATED_TASK.search(reply)
        task_id = str(task.get("id")) if isinstance(task, dict) else (found.group(1) if found else "")
        subject = str(given.get("subject", "")).strip()
        if subject:
            self.tasks[task_id] = subject
            self.transcript.set_todo(subject, "pending")

    def _task_updated(self, given: dict[str, Any]) -> None:
        task_id = str(given.get("taskId", ""))
        old = self.tasks.get(task_id)
        if old is None:
            return  # a task made before this transcript began (a shared task list)
        status = str(given.get("status") or self.transcript.todos.get(old, "pending"))
        subject = str(given.get("subject") or old).strip()
        self.transcript.todos.pop(old, None)
        if status == "deleted":
            self.tasks.pop(task_id, None)
            return
        self.tasks[task_id] = subject
        self.transcript.set_todo(subject, status)


def _output_lines(output: str) -> list[str]:
    """What a failed Bash call printed, without what Claude Code adds to it: its tags
    (<tool_use_error>, <bash-stderr>) and its "Exit code N" line."""
    lines = [line.strip() for line in _TAG.sub("", output).splitlines()]
    return [line for line in lines if not _EXIT_CODE.match(line)]


def _is(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def _text(content: Any) -> str:
    """A message's text: a plain string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if _is(b, "text"))
    return ""
