"""Factory Droid's own session file, read into a `Transcript` (client "droid").

Where it is (Droid 0.225.2; fixture: tests/fixtures/transcripts/droid-0.225.2):
`~/.factory/sessions/<cwd with each "/" made "-">/<session id>.jsonl` (seen: "_" and "." kept);
every hook's input names it (`transcript_path`, Claude Code's hook shape).

What is in it: JSON Lines. The first is `{"type": "session_start", "id", "cwd", "title", ...}`;
then `{"type": "message", "id", "parentId", "message": {"role", "content"}}` records whose content
is Anthropic's blocks, as Claude Code's transcript: `text`, `tool_use` (`id`, `name`, `input`),
and in a later user message the `tool_result` (`tool_use_id`, `is_error`, `content`). Droid also
writes as user messages what the user did not type: its hook runs (`visibility: "user_only"`,
`hookEventName`) and its context reminders (ids `context-...`, `<system-reminder>` text).

Tools read: `Create` and `Edit` (`file_path`), `Execute` (`command`; a failure's result reads
"Error: Command failed (exit code: N)", the output, "[Process exited with code N]"), `TodoWrite`
(`todos`, as Claude Code's list of {content, status}: `droid exec` 0.225.2 does not offer it to
the model, so this shape is not one a real run here wrote)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .gemini import SAFE_ID
from .shell import failure
from .transcript import PENDING, Capped, Transcript, json_lines, newest, todo_items

CLIENT = "droid"
FILE_TOOLS = frozenset({"Create", "Edit", "MultiEdit"})
# Droid's own lines around a failed command's output.
_DROID_LINE = re.compile(r"^(Error: Command failed \(exit code: -?\d+\)|\[Process exited with code -?\d+\])$")


def read(path: Path) -> Transcript:
    """The facts of one Droid session file; a torn or unknown line is skipped."""
    reader = _Reader(Transcript(CLIENT))
    for record in json_lines(path):
        reader.add(record)
    return reader.transcript


class _Reader:
    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.calls: Capped[str, tuple[str, dict[str, Any]]] = Capped(PENDING)  # id -> (name, input)

    def add(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "session_start":
            for key, field in (("id", "session_id"), ("cwd", "cwd")):
                if isinstance(record.get(key), str) and record[key]:
                    setattr(self.transcript, field, record[key])
            return
        message = record.get("message")
        if kind != "message" or not isinstance(message, dict):
            return
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if message.get("role") == "assistant":
            self.answered(blocks)
        elif message.get("role") == "user":
            self.user(record, message, blocks)

    def answered(self, blocks: list[dict[str, Any]]) -> None:
        for block in blocks:
            if block.get("type") == "text" and str(block.get("text", "")).strip():
                self.transcript.last_message = str(block["text"]).strip()
            elif block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                given = block.get("input")
                self.calls[block["id"]] = (
                    str(block.get("name", "")),
                    given if isinstance(given, dict) else {},
                )

    def user(self, record: dict[str, Any], message: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
        results = [b for b in blocks if b.get("type") == "tool_result"]
        for block in results:
            self.result(block)
        own = message.get("visibility") == "user_only" or str(record.get("id", "")).startswith("context-")
        if results or own:
            return
        text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text").strip()
        if text and not text.startswith("<system-reminder>"):
            self.transcript.asks.append(text)

    def result(self, block: dict[str, Any]) -> None:
        name, given = self.calls.pop(str(block.get("tool_use_id")), ("", {}))
        failed = bool(block.get("is_error"))
        if name == "Execute" and failed:
            lines = [
                line
                for line in _text(block.get("content")).splitlines()
                if not _DROID_LINE.match(line.strip())
            ]
            self.transcript.failures.append(failure(str(given.get("command", "")), lines))
        elif failed:
            return  # an edit that failed changed nothing
        elif name in FILE_TOOLS and isinstance(given.get("file_path"), str):
            self.transcript.touch(given["file_path"])
        elif name == "TodoWrite" and isinstance(given.get("todos"), list):
            self.transcript.set_todos(todo_items(given["todos"], "content"))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def project_folder(home: Path, cwd: Path) -> Path:
    """`~/.factory/sessions/<cwd with each "/" made "-">`: /tmp/my_app -> `-tmp-my_app`."""
    return home / ".factory" / "sessions" / str(cwd).replace("/", "-")


def locate(home: Path, cwd: Path, session_id: str = "") -> Path | None:
    """The session file of `session_id` (this project's folder first, then any), or else this
    project's newest; None when there is none."""
    folder = project_folder(home, cwd)
    if session_id:
        if not SAFE_ID.fullmatch(session_id):
            return None
        mine = folder / f"{session_id}.jsonl"
        found = (
            [mine] if mine.is_file() else list((home / ".factory" / "sessions").glob(f"*/{session_id}.jsonl"))
        )
    else:
        found = list(folder.glob("*.jsonl"))
    return newest(f for f in found if f.is_file())
