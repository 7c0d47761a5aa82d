"""A scripted Gemini model for the real-client tier: a `ModelRecorder` that answers the Gemini API
the way Gemini CLI calls it, playing a fixed list of steps in the main conversation, so a real
`gemini -p` run really calls its tools (a todo list, a file write, a failing shell command) and
writes a real session file, with no model behind it.

Gemini CLI (through @google/genai) sends, under GOOGLE_GEMINI_BASE_URL:
- `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` for the conversation: answered by
  the script, one step per request, as Server-Sent Events (`data: <GenerateContentResponse>`);
- `POST .../<model>:generateContent` for side calls (the next-speaker check, the model router,
  a session summary): answered with JSON that fits the request's `responseJsonSchema`, or text;
- `POST .../<model>:countTokens`: an estimate from the request size.

Step n's function call has the id `sv-<tag>-<n>` (a tag per script), which Gemini CLI keeps on its
result; the step a request gets is one past the newest of the script's results in it, so a
retried request, a compressed history or a resumed session (the earlier run's results are
another script's) gets the right step, and the script needs no state of its own."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .model_recorder import ModelRecorder, Recorded


@dataclass(frozen=True)
class Call:
    """A step that calls one tool: the model's `functionCall` part. `context_tokens`, when set,
    is the prompt size the reply reports (`usageMetadata.promptTokenCount`): a large one makes
    the client compress its history before the next request."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    context_tokens: int = 0


@dataclass(frozen=True)
class Say:
    """A step that answers in text and ends the turn."""

    text: str
    context_tokens: int = 0


Step = Call | Say

FAILING_COMMAND = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\""
FAILURE_LINE = "sv-boom: widget config missing"
PLAN_PATH = "notes/plan.md"
TODOS = [
    {"description": "Draft the widget plan", "status": "completed"},
    {"description": "Check the widget config", "status": "in_progress"},
    {"description": "Ship the widget", "status": "pending"},
]


def checkpoint_script(marker: str, todo_tool: str = "write_todos") -> list[Step]:
    """The script the capture tests play: a todo list, a file, a failing command, a marker."""
    return [
        Call(todo_tool, {"todos": TODOS}),
        Call("write_file", {"file_path": PLAN_PATH, "content": "# Widget plan\n\n1. Check the config.\n"}),
        Call("run_shell_command", {"command": FAILING_COMMAND, "description": "Check the widget config"}),
        Say(f"Done for now; the widget config is missing. {marker}"),
    ]


SNAPSHOT = (
    "<state_snapshot>\n<overall_goal>Scripted summary of the widget work.</overall_goal>\n</state_snapshot>"
)


def _usage(step: Step | None, request_chars: int) -> dict[str, int]:
    prompt = (step.context_tokens if step else 0) or max(1, request_chars // 4)
    return {"promptTokenCount": prompt, "candidatesTokenCount": 8, "totalTokenCount": prompt + 8}


def step_id(tag: str, index: int) -> str:
    """The id of a script's step `index` call: "sv-<script tag>-<index>"."""
    return f"sv-{tag}-{index}"


def played(ids: Sequence[str], tag: str) -> int:
    """How many of a script's steps a request shows played: one past the step whose result is
    the newest of this script's in it (0 for none: results of another script, say the run
    before a resume, do not count)."""
    ours = re.compile(rf"sv-{re.escape(tag)}-(\d+)$")  # Gemini CLI prefixes "<tool>__"
    for result_id in reversed(ids):
        found = ours.search(result_id)
        if found:
            return int(found.group(1)) + 1
    return 0


def _parts(step: Step, call_id: str) -> list[dict[str, Any]]:
    if isinstance(step, Call):
        return [{"functionCall": {"id": call_id, "name": step.name, "args": step.args}}]
    return [{"text": step.text}]


def _response(parts: list[dict[str, Any]], usage: dict[str, int]) -> dict[str, Any]:
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "scripted"}


def _fill(schema: Any) -> Any:
    """A value that fits a (small) JSON schema: what a side call's structured answer needs."""
    if not isinstance(schema, dict):
        return "scripted"
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = (kind[0] if isinstance(kind, list) else kind or "object").lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: _fill(sub) for name, sub in props.items()}
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    return {"array": [], "boolean": False}.get(kind, "scripted")


# Side calls whose answer steers the run: "the user speaks next" ends a headless turn.
_FIXED = {"next_speaker": "user"}


def side_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The reply to a non-streamed generateContent: JSON for a schema, a `<state_snapshot>`
    for a history-compression call, else a short text."""
    config = body.get("generationConfig") or body.get("config") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    usage = _usage(None, 0)
    if schema is None:
        text = SNAPSHOT if "state_snapshot" in json.dumps(body) else "Scripted session summary."
        return _response([{"text": text}], usage)
    value = _fill(schema)
    if isinstance(value, dict):
        value.update({k: v for k, v in _FIXED.items() if k in value})
    return _response([{"text": json.dumps(value)}], usage)


def result_ids(body: dict[str, Any]) -> list[str]:
    """The ids of the tool results in a request's conversation, oldest first."""
    return [
        str(part["functionResponse"].get("id", ""))
        for content in body.get("contents") or []
        if isinstance(content, dict)
        for part in content.get("parts") or []
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)
    ]


def _json(body: str) -> dict[str, Any]:
    try:
        value = json.loads(body or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class ScriptedGemini(ModelRecorder):
    """`with ScriptedGemini(steps) as model:` then GOOGLE_GEMINI_BASE_URL=model.base_url."""

    def __init__(self, steps: Sequence[Step]) -> None:
        super().__init__()
        if not steps:
            raise ValueError("a script needs at least one step")
        self.steps = list(steps)
        self.tag = os.urandom(3).hex()  # this script's call ids: sv-<tag>-<step>

    def step_for(self, body: dict[str, Any]) -> tuple[int, Step]:
        """The step a conversation request gets: the next one, the last one once all played."""
        index = min(played(result_ids(body), self.tag), len(self.steps) - 1)
        return index, self.steps[index]

    def stream(self, request: Recorded) -> bytes:
        index, step = self.step_for(_json(request.body))
        event = _response(_parts(step, step_id(self.tag, index)), _usage(step, len(request.body)))
        return f"data: {json.dumps(event)}\n\n".encode()

    def answer(self, request: Recorded) -> tuple[int, str, bytes]:
        path = request.path.split("?", 1)[0]
        if path.endswith(":countTokens"):
            return 200, "application/json", json.dumps({"totalTokens": len(request.body) // 4}).encode()
        if path.endswith(":streamGenerateContent"):
            return 200, "text/event-stream", self.stream(request)
        if path.endswith(":generateContent"):
            return 200, "application/json", json.dumps(side_answer(_json(request.body))).encode()
        return super().answer(request)

    def conversation_requests(self) -> list[dict[str, Any]]:
        """The bodies of the streamed (main conversation) requests, parsed."""
        with self._lock:
            rows = [r for r in self.requests if ":streamGenerateContent" in r.path]
        return [_json(r.body) for r in rows]
