"""Qwen Code's own session file, read into a `Transcript` (client "qwen").

Where it is (Qwen Code 0.24; its docs name no path for sessions, so this follows the code:
`Storage.getProjectDir`, `sanitizeCwd` and `ChatRecordingService.ensureConversationFile`, and
matches what third-party readers document, e.g. https://docs.specstory.com/integrations/qwen-code):
- `~/.qwen/projects/<cwd with each non-alphanumeric character made "-">/chats/<session id>.jsonl`,
  e.g. /home/user/widget -> `~/.qwen/projects/-home-user-widget/chats/<id>.jsonl`;
- `~/.qwen` is QWEN_RUNTIME_DIR, else QWEN_HOME, when set (pass that folder's parent as `home`
  only if it is named `.qwen`; otherwise read the hook payload's `transcript_path`).
Every hook payload names the file (`transcript_path`), so `locate` is for when none is at hand.

What is in it: JSON Lines, one record per event, each with `uuid`, `parentUuid` (a tree: a rewind
leaves the abandoned turns on a dead branch, kept here: a checkpoint records what happened),
`sessionId`, `timestamp`, `cwd`, `version` and `type`:
- "user": `message.parts` (Gemini's Content shape); a prompt the user typed has no `subtype` (or
  "mid_turn_user_message") and `provenance` "real_user"; `systemPayload.displayText`, when
  there, is the text as typed;
- "assistant": `message.parts` with `text` (and `thought`) parts and `functionCall`s
  (`id`, `name`, `args`);
- "tool_result": the `functionResponse` parts, and `toolCallResult` (`callId`, `status`
  "success" | "error" | "cancelled", `resultDisplay`);
- "system": `subtype` "chat_compression" (`systemPayload.compressedHistory`, whose first user
  text is the `<state_snapshot>` summary), "ui_telemetry", "attribution_snapshot", ...

The format is not Gemini CLI's (a fork's, rewritten), but the tool calls are: the same names
(`write_file`, `run_shell_command`; `edit` for Gemini's `replace`; `todo_write` with `content`
for `write_todos`'s `description`) and the same shell result text, so the rules for files,
todos and failures are gemini.py's."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sessionvault.local.hook.capture.gemini import SAFE_ID, SNAPSHOT, SessionReader, snapshot_of, text_of
from sessionvault.local.hook.capture.transcript import PENDING, Capped, Transcript, json_lines, newest

CLIENT = "qwen"
PROMPTS = (None, "mid_turn_user_message")  # the user subtypes that are typed prompts


def read(path: Path) -> Transcript:
    """The facts of one Qwen Code session file."""
    reader = QwenReader(Transcript(CLIENT))
    for record in json_lines(path):
        reader.add(record)
    return reader.transcript


class QwenReader(SessionReader):
    """Qwen Code's records: a call in an assistant record, its result in a later tool_result."""

    todo_tools = frozenset({"todo_write"})
    file_tools = frozenset({"write_file", "edit"})

    def __init__(self, transcript: Transcript) -> None:
        super().__init__(transcript)
        self.calls: Capped[str, Mapping[str, Any]] = Capped(PENDING)  # call id -> its functionCall

    def add(self, record: Mapping[str, Any]) -> None:
        for key, field in (("sessionId", "session_id"), ("cwd", "cwd")):
            if isinstance(record.get(key), str) and record[key]:
                setattr(self.transcript, field, record[key])
        kind = record.get("type")
        if kind == "user":
            self.asked(record)
        elif kind == "assistant":
            self.answered(record)
        elif kind == "tool_result":
            self.result(record)
        elif kind == "system" and record.get("subtype") == "chat_compression":
            self.compressed(record.get("systemPayload"))

    def asked(self, record: Mapping[str, Any]) -> None:
        if record.get("subtype") not in PROMPTS or record.get("provenance", "real_user") != "real_user":
            return
        payload = record.get("systemPayload")
        shown = payload.get("displayText") if isinstance(payload, dict) else None
        text = (shown if isinstance(shown, str) else text_of(_parts(record))).strip()
        if text:
            self.transcript.asks.append(text)

    def answered(self, record: Mapping[str, Any]) -> None:
        parts = _parts(record)
        text = text_of(parts).strip()
        if text:
            self.transcript.last_message = text
        for part in parts:
            call = part.get("functionCall") if isinstance(part, dict) else None
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                self.calls[call["id"]] = call

    def result(self, record: Mapping[str, Any]) -> None:
        """A finished call, in gemini.py's shape (name, args, status, result), applied once."""
        outcome = record.get("toolCallResult")
        if not isinstance(outcome, dict) or not isinstance(outcome.get("callId"), str):
            return
        call, parts = self.calls.pop(outcome["callId"], {}), _parts(record)
        names = [
            p["functionResponse"].get("name") for p in parts if isinstance(p.get("functionResponse"), dict)
        ]
        finished = {
            "id": outcome["callId"],
            "name": call.get("name", names[0] if names else None),
            "args": call.get("args", {}),
            "status": outcome.get("status"),
            "result": parts,
            "resultDisplay": outcome.get("resultDisplay"),
        }
        if self.first_time(finished):
            self.tool(finished)

    def compressed(self, payload: Any) -> None:
        history = payload.get("compressedHistory") if isinstance(payload, dict) else None
        for content in history if isinstance(history, list) else []:
            text = text_of(content.get("parts")).strip() if isinstance(content, dict) else ""
            if text.startswith(SNAPSHOT):
                self.transcript.compact_summary = snapshot_of(text)
                return


def _parts(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    message = record.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def project_folder(home: Path, cwd: Path) -> Path:
    """`~/.qwen/projects/<sanitized cwd>`: Qwen Code's `sanitizeCwd` (Windows also lowercases)."""
    return home / ".qwen" / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", os.path.abspath(cwd))


def locate(home: Path, cwd: Path, session_id: str = "") -> Path | None:
    """The session file of `session_id` (this project's folder first, then any), or else this
    project's newest; None when there is none."""
    chats = project_folder(home, cwd) / "chats"
    if session_id:
        if not SAFE_ID.fullmatch(session_id):
            return None
        mine = chats / f"{session_id}.jsonl"
        found = (
            [mine]
            if mine.is_file()
            else list((home / ".qwen" / "projects").glob(f"*/chats/{session_id}.jsonl"))
        )
    else:
        found = list(chats.glob("*.jsonl"))
    return newest(f for f in found if f.is_file())
