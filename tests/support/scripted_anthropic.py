"""A scripted Anthropic Messages endpoint for the real-client tier: Claude Code runs for real
(its tools, hooks and transcript), but its "model" plays a fixed list of steps, so a test knows
exactly which tools were called, with what, and what the last message says. No model, no key.

Each step is a tool call or a final text. The step a request gets is read from the request
itself (how many assistant turns its conversation already holds), not from a counter, so a
client's retry of the same request gets the same step again. Only the main conversation plays
the script: a side request (a title, a token count) gets a short plain answer, and a compaction
request the `summary` given.

Claude Code 2.1.x sends some tools "deferred": named in a system message, callable only after
its ToolSearch tool fetched their schema. A step calling such a tool is preceded by that
ToolSearch call, as a real model would do it."""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from .model_recorder import ModelRecorder, Recorded

MODEL = "claude-scripted-1"
# The system message Claude Code 2.1.x lists deferred tools in, one name a line, up to a blank line.
_DEFERRED = re.compile(r"deferred tools are now available via ToolSearch[^\n]*\n((?:[A-Za-z0-9_-]+\n)+)")
_CWD = re.compile(r"Primary working directory: ([^\n]+)")
# Claude Code 2.1.x's compaction request (/compact, or automatic): its last user text says so.
_COMPACT_ASK = re.compile(r"create a detailed summary of the conversation|followed by a <summary> block")


@dataclass(frozen=True)
class ToolCall:
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Say:
    text: str


Step = ToolCall | Say
_OVER = Say("The scripted session is over.")


@dataclass(frozen=True)
class Offer:
    """What the first main request tells about the client: its tools (top-level and deferred)
    and the working directory it reports, for a script whose steps depend on them."""

    tools: frozenset[str]
    cwd: str


# A script fixed up front, or made from the first main request's `Offer` (TaskCreate where it
# exists, else TodoWrite; a file path under the project, absolute as a real model sends it).
Script = Sequence[Step] | Callable[[Offer], Sequence[Step]]


class ScriptedAnthropic(ModelRecorder):
    """`with ScriptedAnthropic(steps) as model:`, then ANTHROPIC_BASE_URL=model.base_url."""

    def __init__(self, script: Script, summary: str = "Scripted compaction summary.") -> None:
        super().__init__()
        self._script = script
        self._steps: list[Step] | None = None
        self._summary = summary
        self._plan_lock = threading.Lock()

    def answer(self, request: Recorded) -> tuple[int, str, bytes]:
        if request.method != "POST" or "/v1/messages" not in request.path:
            return 404, "application/json", _error("not_found_error", "no such endpoint")
        try:
            body = json.loads(request.body)
        except ValueError:
            return 400, "application/json", _error("invalid_request_error", "body is not JSON")
        if "/count_tokens" in request.path:
            return 200, "application/json", json.dumps({"input_tokens": len(request.body) // 4}).encode()
        content = self._reply(body)
        if body.get("stream"):
            return 200, "text/event-stream", _sse(content)
        return 200, "application/json", json.dumps(_message(content)).encode()

    def _reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The one content block answering `body`."""
        if _COMPACT_ASK.search(_last_user_text(body)):
            return _text(f"<summary>\n{self._summary}\n</summary>")
        if not body.get("tools") or not _names(body, top_level_only=True) & {"Bash", "Write"}:
            return _text("Scripted side answer.")  # title, topic, quota check...
        steps = self._plan(body)
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        # Past the script (a follow-up prompt, --continue): its last words again, never a tool
        # call, so a client cannot loop on one.
        step = (
            steps[turn] if turn < len(steps) else next((s for s in steps[::-1] if isinstance(s, Say)), _OVER)
        )
        if isinstance(step, Say):
            return _text(step.text)
        return {"type": "tool_use", "id": f"toolu_sv{turn:02d}", "name": step.name, "input": step.input}

    def _plan(self, body: dict[str, Any]) -> list[Step]:
        """The script, resolved once, from the first main request, with ToolSearch calls added
        before the first use of each deferred tool."""
        with self._plan_lock:
            if self._steps is None:
                cwd = _CWD.search(_all_text(body))
                offer = Offer(_names(body, top_level_only=False), cwd.group(1).strip() if cwd else "")
                raw = self._script(offer) if callable(self._script) else self._script
                self._steps = _with_tool_search(list(raw), _names(body, top_level_only=True))
            return self._steps

    @property
    def steps(self) -> list[Step]:
        """The script as played (after the first main request), for an assertion message."""
        return list(self._steps or [])


def checkpoint_script(
    marker: str,
    task: str = "Write the widget plan",
    file_path: str = "notes/plan.md",
    content: str = "# Plan\n\n1. Configure the widget.\n",
    command: str = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\"",
) -> Callable[[Offer], list[Step]]:
    """The script the checkpoint tests play: make a task, write `file_path` (a relative one is
    made absolute under the client's working directory, as Write's schema asks), run a failing
    `command`, end with a message holding `marker`. The task tool is the one Claude Code offers:
    TaskCreate + TaskUpdate (2.1.x with task tools on), else TodoWrite, else none."""

    def steps(offer: Offer) -> list[Step]:
        path = str(PurePosixPath(offer.cwd or "/", file_path))
        return [
            *_task_steps(task, offer.tools),
            ToolCall("Write", {"file_path": path, "content": content}),
            ToolCall("Bash", {"command": command, "description": "Check the widget config"}),
            Say(f"Done: the plan is written, the widget config is missing. {marker}"),
        ]

    return steps


def _task_steps(task: str, offered: frozenset[str]) -> list[Step]:
    active = "Writing the widget plan"
    if "TaskCreate" in offered:
        created = ToolCall("TaskCreate", {"subject": task, "description": task, "activeForm": active})
        # Claude Code numbers a fresh task list from 1: the first task made is "1".
        return [created, ToolCall("TaskUpdate", {"taskId": "1", "status": "in_progress"})]
    if "TodoWrite" in offered:
        todo = {"content": task, "status": "in_progress", "activeForm": active}
        return [ToolCall("TodoWrite", {"todos": [todo]})]
    return []  # this client offers no task tool: the script goes on without one


def _with_tool_search(steps: list[Step], top_level: frozenset[str]) -> list[Step]:
    out: list[Step] = []
    loaded = set(top_level)
    for step in steps:
        if isinstance(step, ToolCall) and step.name not in loaded and "ToolSearch" in top_level:
            group = sorted({s.name for s in steps if isinstance(s, ToolCall) and s.name not in loaded})
            out.append(ToolCall("ToolSearch", {"query": "select:" + ",".join(group)}))
            loaded.update(group)
        out.append(step)
    return out


def _names(body: dict[str, Any], top_level_only: bool) -> frozenset[str]:
    top = {t.get("name", "") for t in body.get("tools", []) if not t.get("defer_loading")}
    if top_level_only:
        return frozenset(top)
    deferred = {name for group in _DEFERRED.findall(_all_text(body)) for name in group.split()}
    return frozenset(top | deferred)


def _all_text(body: dict[str, Any]) -> str:
    """Every text block of the request's messages, joined (where the deferred list is)."""
    parts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(b.get("text", "") for b in content if isinstance(b, dict))
    return "\n".join(parts)


def _last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    if not users:
        return ""
    content = users[-1].get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _message(block: dict[str, Any]) -> dict[str, Any]:
    stop = "tool_use" if block["type"] == "tool_use" else "end_turn"
    return {
        "id": f"msg_sv_{uuid.uuid4().hex[:24]}",  # unique: a client may drop a repeated id
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def _sse(block: dict[str, Any]) -> bytes:
    """The event stream of a one-block message: a tool call's input goes as one JSON delta."""
    whole = _message(block)
    start = {**whole, "content": [], "stop_reason": None, "usage": {"input_tokens": 100, "output_tokens": 1}}
    if block["type"] == "tool_use":
        opening = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        opening = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    events = [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": opening}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 20},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def _error(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
