"""Gemini CLI's own session file, read into a `Transcript` (client "gemini").

Where it is (Gemini CLI 0.61; docs/cli/session-management.md: "Sessions are stored in
`~/.gemini/tmp/<project_hash>/chats/`"; the code, `Storage.getProjectTempDir` and
`ChatRecordingService.initialize`, is more exact):
- `~/.gemini/tmp/<project id>/chats/session-<YYYY-MM-DDTHH-MM>-<first 8 of session id>.jsonl`;
- the project id is a slug of the folder's name (`widget`, `widget-1`, ...) kept in
  `~/.gemini/projects.json` (`{"projects": {"<absolute cwd>": "<slug>"}}`), and each project
  folder holds `.project_root`, the absolute path it belongs to. Before the slugs it was the
  SHA-256 hex of the path (the `projectHash` still written in every file);
- subagents write `chats/<parent session id>/<agent id>.jsonl`: not sessions of their own.
Every hook payload names the file itself (`transcript_path`, docs/hooks/reference.md), so
`locate` is for when no payload is at hand.

What is in it: JSON Lines. A metadata line (`sessionId`, `projectHash`, `startTime`, `kind`),
then one line per message (`id`, `type` "user" | "gemini" | "info" | "error" | "warning",
`content`); a gemini message is written again, same id, when its tool calls finish
(`toolCalls`: `name`, `args`, `status`, `result`). `{"$set": {...}}` lines update the metadata;
a `$set` of `messages` is the whole history rewritten (after a resume or a compression, where
the summary is a user message opening with `<state_snapshot>`); `{"$rewindTo": id}` drops the
messages from `id` on (kept here: a checkpoint records what happened). Sessions from before
JSONL are one JSON document, `session-*.json` (metadata and a `messages` array)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from sessionvault.local.hook.capture.shell import failure
from sessionvault.local.hook.capture.transcript import (
    Capped,
    Transcript,
    json_lines,
    json_value,
    newest,
    todo_items,
)

CLIENT = "gemini"
MAX_DOCUMENT = 20_000_000  # a legacy one-document session larger than this is not parsed
FILE_TOOLS = frozenset({"write_file", "replace"})
SHELL_TOOLS, READ_TOOLS = frozenset({"run_shell_command"}), frozenset({"read_file", "read_many_files"})
TODO_TOOLS = frozenset({"write_todos"})
FINISHED = frozenset({"success", "error", "cancelled"})
# User messages the client itself wrote, not the user (Gemini CLI's `isIgnoredUserContent`).
NOT_ASKED = ("/", "?", "<session_context>")
SNAPSHOT = "<state_snapshot>"
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>", re.DOTALL)
_WORKSPACE = re.compile(r"Workspace Directories:\*\*\n\s*- (.+)|working in the directory: (.+)")
# run_shell_command's result lines besides the output (Qwen Code's also open with Command, Directory)
_SHELL_FIELDS = (
    "Command: ",
    "Directory: ",
    "Error: ",
    "Exit Code: ",
    "Signal: ",
    "Background PIDs: ",
    "Process Group PGID: ",
)
# run_shell_command's result lines that are not the command's output: "(empty)" for no output
_NOT_OUTPUT = ("<untrusted_context>", "</untrusted_context>", "(empty)")
_MAX_SEEN = 10_000
SAFE_ID = re.compile(r"[A-Za-z0-9_-]+")  # a session id that is safe in a file name or glob


def read(path: Path) -> Transcript:
    """The facts of one Gemini CLI session file (JSONL, or a legacy JSON document)."""
    reader = SessionReader(Transcript(CLIENT, cwd=_project_root(path)))
    for record in records(path):
        reader.add(record)
    return reader.transcript


def records(path: Path) -> Iterator[dict[str, Any]]:
    """The file's records, oldest first: its lines, or a legacy document's metadata then
    each of its messages. A legacy document above MAX_DOCUMENT bytes yields nothing."""
    if path.suffix != ".json":
        yield from json_lines(path)
        return
    if path.stat().st_size > MAX_DOCUMENT:
        return
    document = json_value(path.read_bytes())
    if isinstance(document, dict):
        messages = document.pop("messages", None)
        yield document
        yield from (m for m in messages if isinstance(m, dict)) if isinstance(messages, list) else ()


def _project_root(path: Path) -> str:
    """The project folder a session file belongs to, from `.project_root` beside `chats/`."""
    return _reads(path.parent.parent / ".project_root")


class SessionReader:
    """Folds records into a Transcript; a tool call is taken once, when it has finished."""

    todo_tools = TODO_TOOLS
    file_tools = FILE_TOOLS

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.seen: Capped[str, None] = Capped(_MAX_SEEN)  # finished tool call ids, oldest first

    def add(self, record: Mapping[str, Any]) -> None:
        if isinstance(record.get("sessionId"), str):
            self.transcript.session_id = record["sessionId"]
        update = record.get("$set")
        if isinstance(update, dict):
            self.rewritten(update)
        elif isinstance(record.get("id"), str):
            self.message(record)

    def rewritten(self, update: Mapping[str, Any]) -> None:
        """A `$set`: a history rewrite repeats messages already read, so only the client's own
        additions count (the workspace line, a compression's summary)."""
        if isinstance(update.get("sessionId"), str):
            self.transcript.session_id = update["sessionId"]
        for message in update.get("messages") or []:
            if isinstance(message, dict) and message.get("type") == "user":
                self.context_or_summary(text_of(message.get("content")))

    def message(self, message: Mapping[str, Any]) -> None:
        kind = message.get("type")
        if kind == "user":
            self.user(text_of(message.get("content")))
        elif kind == "gemini":
            self.reply(message)

    def context_or_summary(self, text: str) -> bool:
        """Whether `text` is the client's: its session context (the workspace) or a summary."""
        stripped = text.strip()
        if stripped.startswith("<session_context>"):
            found = _WORKSPACE.search(stripped)
            if found and not self.transcript.cwd:
                self.transcript.cwd = (found.group(1) or found.group(2)).strip()
            return True
        if stripped.startswith(SNAPSHOT):
            self.transcript.compact_summary = snapshot_of(stripped)
            return True
        return False

    def user(self, text: str) -> None:
        if self.context_or_summary(text):
            return
        asked = _HOOK_CONTEXT.sub("", text).strip()  # what a hook added is not the user's
        if asked and not asked.startswith(NOT_ASKED):
            self.transcript.asks.append(asked)

    def reply(self, message: Mapping[str, Any]) -> None:
        text = text_of(message.get("content")).strip()
        if text:
            self.transcript.last_message = text
        for call in message.get("toolCalls") or []:
            if isinstance(call, dict) and self.first_time(call):
                self.tool(call)

    def first_time(self, call: Mapping[str, Any]) -> bool:
        key = call.get("id")
        if call.get("status") not in FINISHED or key in self.seen:
            return False
        if not isinstance(key, str):
            return True  # no id to tell a repeat by
        self.seen[key] = None
        return True

    def tool(self, call: Mapping[str, Any]) -> None:
        name, args, ok = call.get("name"), call.get("args"), call.get("status") == "success"
        if not isinstance(args, dict):
            return
        if name in self.todo_tools and ok and isinstance(args.get("todos"), list):
            # Gemini CLI's write_todos names a task's text `description`, Qwen Code's todo_write `content`
            self.transcript.set_todos(todo_items(args["todos"], "description", "content"))
        elif name in self.file_tools and ok and isinstance(args.get("file_path"), str):
            self.transcript.touch(args["file_path"])
        if name in READ_TOOLS | SHELL_TOOLS:  # `cat .env`, read_file of a key: withheld if repeated
            self.transcript.output_of(str(args.get("file_path") or args.get("command")), tool_output(call))
        if name in SHELL_TOOLS:
            failed = shell_failure(str(args.get("command", "")), call)
            if failed:
                self.transcript.failures.append(failed)


def text_of(content: Any) -> str:
    """The text of a message's `content`: a string, or the text of its (non-thought) parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    texts = (p.get("text") for p in content if isinstance(p, dict) and not p.get("thought"))
    return "".join(t for t in texts if isinstance(t, str))


def snapshot_of(text: str) -> str:
    """A compression summary's `<state_snapshot>...</state_snapshot>`, without what follows."""
    end = text.find("</state_snapshot>")
    return text[: end + len("</state_snapshot>")] if end >= 0 else text


def tool_output(call: Mapping[str, Any]) -> str:
    """What a finished tool call sent back to the model: its functionResponse's output or error."""
    result = call.get("result")
    parts = result if isinstance(result, list) else [result]
    for part in parts:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            value = response.get("output", response.get("error", ""))
            return value if isinstance(value, str) else json.dumps(value)
    shown = call.get("resultDisplay")
    return shown if isinstance(shown, str) else ""


def shell_fields(output: str) -> tuple[list[str], dict[str, str]]:
    """run_shell_command's result (`Output: ...`, then `Error: `, `Exit Code: `, ... lines)
    as (the command's output lines, {field: value})."""
    lines, fields = [], {}
    for line in output.replace("\r", "").splitlines():
        field = next((f for f in _SHELL_FIELDS if line.startswith(f)), None)
        if field:
            fields[field[:-2]] = line[len(field) :].strip()
        elif (printed := line.removeprefix("Output: ")).strip() not in _NOT_OUTPUT:
            lines.append(printed)
    return lines, fields


def shell_failure(command: str, call: Mapping[str, Any]) -> str:
    """ "command: first error line" for a shell call that failed (an error status, a non-zero
    exit code, an Error or Signal field), else "". Gemini CLI writes `Exit Code` only when it
    is not 0, Qwen Code always; both write "(none)" for a field with nothing to say."""
    lines, fields = shell_fields(tool_output(call))
    said = {k: v for k, v in fields.items() if v not in ("(none)", "")}
    failed = (
        call.get("status") == "error" or said.get("Exit Code", "0") != "0" or {"Error", "Signal"} & set(said)
    )
    if not failed or call.get("status") == "cancelled":  # the user stopped it: not a failure
        return ""
    otherwise = said.get("Error") or f"exit code {said.get('Exit Code', '?')}"
    return failure(command.strip() or fields.get("Command", ""), lines, otherwise)


def locate(home: Path, cwd: Path, session_id: str = "") -> Path | None:
    """The session file of `session_id` (any project, this one first), or else this project's
    newest; None when there is none. See the module docstring for the layout."""
    base = home / ".gemini" / "tmp"
    folders = project_folders(home, cwd)
    if session_id and not SAFE_ID.fullmatch(session_id):
        return None
    if session_id:
        prefix = session_id[:8]
        for scope in (folders, sorted(base.glob("*"))):
            found = newest(f for d in scope for f in _sessions(d, prefix) if _is_session(f, session_id))
            if found:
                return found
        return None
    return newest(f for d in folders for f in _sessions(d))


def project_folders(home: Path, cwd: Path) -> list[Path]:
    """`~/.gemini/tmp/<id>` folders of the project at `cwd`: the registry's slug, any folder
    whose `.project_root` names it, and the older SHA-256 one."""
    base, root = home / ".gemini" / "tmp", os.path.abspath(cwd)
    names = [_registered(home, root), hashlib.sha256(root.encode()).hexdigest()]
    marked = [p.parent.name for p in base.glob("*/.project_root") if _reads(p) == root]
    unique = dict.fromkeys(n for n in [*names, *marked] if n)
    return [base / name for name in unique if (base / name).is_dir()]


def _registered(home: Path, root: str) -> str:
    try:
        projects = json.loads((home / ".gemini" / "projects.json").read_text(encoding="utf-8"))["projects"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    slug = projects.get(root) if isinstance(projects, dict) else None
    return slug if isinstance(slug, str) and "/" not in slug and slug not in ("", ".", "..") else ""


def _reads(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _sessions(folder: Path, prefix: str = "") -> list[Path]:
    tail = f"-{prefix}" if prefix else ""
    found = [*folder.glob(f"chats/session-*{tail}.jsonl"), *folder.glob(f"chats/session-*{tail}.json")]
    return [f for f in found if f.is_file()]


def _is_session(path: Path, session_id: str) -> bool:
    """Whether the file's first record names `session_id` (file names hold only 8 of it)."""
    return next(records(path), {}).get("sessionId") == session_id
