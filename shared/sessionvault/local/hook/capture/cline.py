"""Cline's own session (its CLI, `cline` 3.x), read into a `Transcript` (client "cline-cli").

Where it is (Cline 3.0.65; fixture: tests/fixtures/transcripts/cline-3.0.65): one folder per
session, `~/.cline/data/sessions/<session id>/`, holding `<id>.json` (the session: `session_id`,
`cwd`, `workspace_root`, `prompt`, `status`, `messages_path`) and `<id>.messages.json`: one JSON
document, `{"version", "sessionId", ..., "messages": [...]}`, rewritten as the session goes.
Cline's hooks are told no file: their input names the session (`sessionContext.rootSessionId`)
and the workspace (`workspaceRoots`), and `adapt` turns that into the common fields.

The messages are Anthropic's blocks: a user's `text` is wrapped in `<user_input mode="...">`;
Cline also writes user messages of its own (`[SYSTEM] ...` reminders, `<hook_context>`);
`tool_use` (`id`, `name`, `input`) and in a later user message the `tool_result` (`tool_use_id`,
`name`, `content`). Tools read: `editor` (`path`; its result is JSON with `success`) and
`run_commands` (`commands`; its result is a list with one `{query, result, error, success}` per
command, the output opening with "[Command exited with code N]" and a "[stderr]" line). Cline
3's CLI has no task-list tool the reader could follow (see tests/support/scripted_chat.py).

The document is streamed: `messages` is read one element at a time, so memory holds one
message (at most MAX_MESSAGE bytes), never the whole file."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .gemini import SAFE_ID
from .shell import failure
from .transcript import MAX_LINE, PENDING, Capped, Transcript, json_value, newest

CLIENT = "cline-cli"
MAX_MESSAGE = MAX_LINE  # a longer message ends the reading: what came before is kept
CHUNK = 65_536
_INPUT = re.compile(r"^<user_input[^>]*>(.*)</user_input>$", re.S)
_CLINE_LINE = re.compile(r"^\[(Command exited with code -?\d+|stderr|stdout)\]$")
_MESSAGES = b'"messages"'
# Cline's hook names (its payload's `hookName`) as the event a hook file is named after.
EVENTS = {"agent_end": "TaskComplete", "pre_compact": "PreCompact", "session_shutdown": "SessionShutdown"}


def read(path: Path) -> Transcript:
    """The facts of the session whose `<id>.messages.json` is `path` (its cwd from the
    `<id>.json` beside it); a torn or cut document keeps what came before the cut."""
    reader = _Reader(Transcript(CLIENT, session_id=path.name.removesuffix(".messages.json")))
    meta = json_value(_head(path.with_name(f"{reader.transcript.session_id}.json")))
    if isinstance(meta, dict) and isinstance(meta.get("cwd"), str):
        reader.transcript.cwd = meta["cwd"]
    for message in messages(path):
        reader.add(message)
    return reader.transcript


def _head(path: Path, limit: int = 1_000_000) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(limit)
    except OSError:
        return b""


def messages(path: Path) -> Iterator[dict[str, Any]]:
    """Each object of the top-level `messages` array, streamed; stops at a cut or a message
    over MAX_MESSAGE bytes."""
    decoder = json.JSONDecoder()
    with path.open("rb") as handle:
        buffer = b""
        while _MESSAGES not in buffer:  # the key comes after the short fields
            chunk = handle.read(CHUNK)
            if not chunk or len(buffer) > MAX_MESSAGE:
                return
            buffer = buffer[-len(_MESSAGES) :] + chunk if len(buffer) > CHUNK else buffer + chunk
        text = (
            buffer[buffer.index(_MESSAGES) + len(_MESSAGES) :].decode("utf-8", "replace").lstrip(" \n\r\t:")
        )
        if not text.startswith("["):
            return
        text, at = text[1:], 0
        while True:
            text = text[at:].lstrip(" \n\r\t,")
            at = 0
            if text.startswith("]"):
                return
            try:
                value, at = decoder.raw_decode(text)
            except (ValueError, RecursionError):
                chunk = handle.read(CHUNK)
                if not chunk or len(text) > MAX_MESSAGE:
                    return
                text += chunk.decode("utf-8", "replace")
                continue
            if isinstance(value, dict):
                yield value


class _Reader:
    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.calls: Capped[str, tuple[str, dict[str, Any]]] = Capped(PENDING)

    def add(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}]
        if message.get("role") == "assistant":
            for block in blocks:
                if block.get("type") == "text" and str(block.get("text", "")).strip():
                    self.transcript.last_message = str(block["text"]).strip()
                elif block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    given = block.get("input")
                    self.calls[block["id"]] = (
                        str(block.get("name", "")),
                        given if isinstance(given, dict) else {},
                    )
            return
        results = [b for b in blocks if b.get("type") == "tool_result"]
        for block in results:
            self.result(block)
        if not results:
            self.asked("\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text").strip())

    def asked(self, text: str) -> None:
        found = _INPUT.match(text)
        if found and found.group(1).strip():  # typed; [SYSTEM] and <hook_context> are Cline's own
            self.transcript.asks.append(found.group(1).strip())

    def result(self, block: dict[str, Any]) -> None:
        name, given = self.calls.pop(str(block.get("tool_use_id")), (str(block.get("name", "")), {}))
        outcome = block.get("content")
        if isinstance(outcome, str):
            outcome = json_value(outcome)
        if name == "run_commands":
            for command in outcome if isinstance(outcome, list) else []:
                if isinstance(command, dict) and command.get("success") is False:
                    lines = str(command.get("result") or command.get("error") or "").splitlines()
                    kept = [line for line in lines if not _CLINE_LINE.match(line.strip())]
                    self.transcript.failures.append(failure(str(command.get("query", "")), kept))
        elif name == "editor" and isinstance(outcome, dict) and outcome.get("success") and given.get("path"):
            self.transcript.touch(str(given["path"]))


def adapt(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A Cline hook's input in the fields `capture.hook` reads: the session id, the workspace
    as the cwd, the event (the hook file's name) and the turn's last words."""
    out = dict(payload)
    context = payload.get("sessionContext")
    if isinstance(context, dict) and isinstance(context.get("rootSessionId"), str):
        out.setdefault("session_id", context["rootSessionId"])
    roots = payload.get("workspaceRoots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        out.setdefault("cwd", roots[0])
    out.setdefault("hook_event_name", EVENTS.get(str(payload.get("hookName")), ""))
    turn = payload.get("turn")
    if isinstance(turn, dict) and isinstance(turn.get("outputText"), str):
        out.setdefault("last_assistant_message", turn["outputText"])
    return out


def sessions_folder(home: Path) -> Path:
    return home / ".cline" / "data" / "sessions"


def locate(home: Path, cwd: Path, session_id: str = "") -> Path | None:
    """The messages file of `session_id`, or else the newest of a session run in `cwd` (its
    `<id>.json`'s cwd); None when there is none."""
    folder = sessions_folder(home)
    if session_id:
        found = folder / session_id / f"{session_id}.messages.json"
        return found if SAFE_ID.fullmatch(session_id) and found.is_file() else None
    mine = str(cwd)
    candidates = []
    for meta in folder.glob("*/*.json"):
        if meta.name.endswith(".messages.json"):
            continue
        data = json_value(_head(meta))
        if isinstance(data, dict) and data.get("cwd") == mine:
            candidates.append(meta.with_name(f"{meta.stem}.messages.json"))
    return newest(f for f in candidates if f.is_file())
