"""OpenAI Codex CLI's own session file (its "rollout"), read without any model.

Codex appends one JSON object a line, `{"timestamp", "type", "payload"}`, to
`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local start time>-<session id>.jsonl`. Two logs are
interleaved: `response_item` lines are the history the model is sent (messages, tool calls, tool
outputs) and `event_msg` lines what the UI replays. Only the first is read here, with the
`session_meta` header (id, cwd, cli_version) and `compacted` (a compaction's summary). A tool
call and its output are separate items joined by `call_id`; whether a command failed is known
only from its output ("Process exited with code N"), so a call is counted at its output. A
command still running when its call returns ("Process running with session ID N") ends in the
output of a later `write_stdin` call naming that session.

The shapes below are those of Codex CLI 0.171.0 (tests/fixtures/transcripts/codex-0.171.0)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .shell import MAX_FAILURE as MAX_FAILURE
from .shell import failure
from .transcript import (
    PENDING,
    Capped,
    Transcript,
    json_lines,
    json_value,
    patched_files,
    todo_items,
)

CLIENT = "codex"
SHELL_TOOLS = frozenset({"exec_command", "shell_command", "shell", "local_shell", "container.exec"})
# What Codex itself puts into a user message (0.171.0 labels each part's kind in the item's
# metadata; older versions did not, so their tags are matched too): AGENTS.md, the environment,
# a compaction's hand-over. Not something the user asked.
_NOT_ASKS = (
    "# AGENTS.md instructions for ",
    "<INSTRUCTIONS>",
    "<user_instructions>",
    "<environment_context>",
    "<turn_aborted>",
    "Another language model started to solve this problem",
)
_HANDOVER = re.compile(r"\AAnother language model started to solve this problem[^\n]*\n")
_EXIT = re.compile(r"^(?:Process exited with code|Exit code:)\s*(-?\d+)\s*$", re.M)
_RUNNING = re.compile(r"^Process running with session ID (\d+)", re.M)
_REFUSED = re.compile(r"not allowed|failed to parse|unsupported|error", re.I)


def read(path: Path) -> Transcript:
    """What the rollout at `path` says; a torn or unknown line is skipped."""
    reader = _Reader(Transcript(client=CLIENT))
    for entry in json_lines(path):
        reader.entry(entry)
    return reader.transcript


class _Reader:
    """Fills one Transcript, entry by entry; keeps only what pairs calls with outputs."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.pending: Capped[str, tuple[str, Any]] = Capped(PENDING)  # call id -> (tool, input)
        self.running: Capped[str, str] = Capped(PENDING)  # unified exec session -> command
        self.said_before = ""  # last_message before the latest one (see _compacted)

    def entry(self, entry: dict[str, Any]) -> None:
        payload = entry.get("payload")
        if not isinstance(payload, dict):
            return
        kind = entry.get("type")
        if kind == "session_meta":
            self._meta(payload)
        elif kind == "compacted":
            self._compacted(payload)
        elif kind == "response_item":
            self._item(payload)

    def _meta(self, meta: dict[str, Any]) -> None:
        # A resumed session writes no second header; a forked one starts a new file.
        if isinstance(meta.get("id"), str):
            self.transcript.session_id = meta["id"]
        if isinstance(meta.get("cwd"), str) and not self.transcript.cwd:
            self.transcript.cwd = meta["cwd"]

    def _item(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "message":
            self._message(item)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            self._call(item)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(str(item.get("call_id")), _text(item.get("output")))

    def _message(self, item: dict[str, Any]) -> None:
        parts = [p for p in item.get("content") or [] if isinstance(p, dict)]
        role = item.get("role")
        if role == "assistant":
            text = "\n".join(str(p.get("text", "")) for p in parts if p.get("type") == "output_text").strip()
            if text:
                self.said_before, self.transcript.last_message = self.transcript.last_message, text
        elif role == "user":
            for text in _asked(item, parts):
                self.transcript.asks.append(text)

    def _call(self, item: dict[str, Any]) -> None:
        call_id = str(item.get("call_id") or item.get("id") or "")
        if item.get("type") == "local_shell_call":  # the older built-in shell: an argv in `action`
            action = item.get("action")
            given: Any = action if isinstance(action, dict) else {}
            self.pending[call_id] = ("local_shell", given)
        elif item.get("type") == "custom_tool_call":
            self.pending[call_id] = (str(item.get("name", "")), str(item.get("input", "")))
        else:
            self.pending[call_id] = (str(item.get("name", "")), _arguments(item.get("arguments")))

    def _output(self, call_id: str, output: str) -> None:
        name, given = self.pending.pop(call_id, ("", None))
        if name == "update_plan":
            self._plan(given, output)
        elif name == "apply_patch":
            self._patched(given.get("input", "") if isinstance(given, dict) else str(given), output)
        elif name in SHELL_TOOLS:
            self._shell(_command(given), output)
        elif name == "write_stdin" and isinstance(given, dict):
            session = str(given.get("session_id", ""))
            command = self.running.pop(session, "")
            if command:
                self._shell(command, output)

    def _plan(self, given: Any, output: str) -> None:
        # The whole list, each call; an output that is not Codex's "Plan updated" refused it.
        items = given.get("plan") if isinstance(given, dict) else None
        if not isinstance(items, list) or (_REFUSED.search(output) and "Plan updated" not in output):
            return
        self.transcript.set_todos(todo_items(items, "step"))

    def _patched(self, envelope: str, output: str) -> None:
        if _exit_code(output) not in (None, 0):
            return  # a patch that did not apply changed nothing
        for path in patched_files(envelope):
            self.transcript.touch(path)

    def _shell(self, command: str, output: str) -> None:
        self.transcript.output_of(command, _body(output))  # `cat .env`: withheld if repeated
        running = _RUNNING.search(_header(output))
        code = _exit_code(output)
        if running and code is None:
            self.running[running.group(1)] = command
        elif "*** Begin Patch" in command:
            self._patched(command, output)  # apply_patch run through the shell (a heredoc)
        elif code:
            self.transcript.failures.append(failure(command, _body(output).splitlines()))

    def _compacted(self, payload: dict[str, Any]) -> None:
        message = str(payload.get("message", ""))
        summary = _HANDOVER.sub("", message, count=1).strip()
        if summary:
            self.transcript.compact_summary = summary
        # Codex records the compaction's own reply as an assistant message just before this
        # entry: that is the summary, not the last thing said to the user.
        if self.transcript.last_message and self.transcript.last_message == summary:
            self.transcript.last_message = self.said_before


def _asked(item: dict[str, Any], parts: list[dict[str, Any]]) -> list[str]:
    """The user's own text parts of a user message. 0.171.0 labels each part's kind in the
    item's metadata ("user.text"; "agents_md.instructions", "environments.environment_context"
    are Codex's); without labels, Codex's own parts are told by their opening tags."""
    texts = [str(p.get("text", "")).strip() for p in parts if p.get("type") == "input_text"]
    meta = item.get("internal_chat_message_metadata_passthrough")
    kinds = meta.get("content_item_kinds") if isinstance(meta, dict) else None
    if isinstance(kinds, list) and len(kinds) == len(texts):
        texts = [t for t, k in zip(texts, kinds, strict=True) if str(k).startswith("user.")]
    return [t for t in texts if t and not t.startswith(_NOT_ASKS)]


def _arguments(raw: Any) -> Any:
    """A function call's arguments: a JSON string of an object; {} when torn or not an object."""
    value = json_value(raw) if isinstance(raw, str) else raw
    return value if isinstance(value, dict) else {}


def _command(given: Any) -> str:
    """The command line of a shell call: exec_command's `cmd`, shell_command's `command`
    string, or the `command` argv of shell / local_shell (`bash -lc X` is X)."""
    if not isinstance(given, dict):
        return ""
    command = given.get("cmd", given.get("command", ""))
    if isinstance(command, list):
        words = [str(w) for w in command]
        if len(words) == 3 and words[1] in ("-lc", "-c"):
            return words[2]
        return " ".join(words)
    return str(command)


def _text(output: Any) -> str:
    """A tool output's text: a string, or a list of content items (text and images)."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(str(i.get("text", "")) for i in output if isinstance(i, dict))
    if isinstance(output, dict):  # an older shell output: {"output": ..., "metadata": {...}}
        return json.dumps(output)
    return ""


def _exit_code(output: str) -> int | None:
    """The exit code a tool output reports: 0.171.0's header line ("Process exited with code
    N", "Exit code: N"), or an older JSON output's metadata.exit_code; None when it says none."""
    found = _EXIT.search(_header(output))
    if found:
        return int(found.group(1))
    meta = _older_output(output).get("metadata")
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    return code if isinstance(code, int) else None


def _header(output: str) -> str:
    """The lines Codex puts before what a command printed (all of an output without them): a
    program may print "Exit code: 0" itself."""
    return output.partition("\nOutput:\n")[0]


def _body(output: str) -> str:
    """What the command printed: after the "Output:" line of the header, or the `output` of an
    older JSON output, else all of it."""
    head, sep, rest = output.partition("\nOutput:\n")
    if sep and _EXIT.search(head):
        return rest
    printed = _older_output(output).get("output")
    return printed if isinstance(printed, str) else output


def _older_output(output: str) -> dict[str, Any]:
    """An older shell output, a JSON object {"output": ..., "metadata": {"exit_code": ...}};
    {} for any other output."""
    data = json_value(output) if output.startswith("{") else None
    return data if isinstance(data, dict) else {}
