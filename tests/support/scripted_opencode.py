"""A scripted model for OpenCode: a `ModelRecorder` that answers OpenAI Chat Completions
(`POST /v1/chat/completions`, `stream: true`) with a fixed four-step session, so a real
`opencode run` leaves a real session in OpenCode's own store without any model behind it.

OpenCode reaches it as a custom provider in opencode.json (`provider_config` below): the
`@ai-sdk/openai-compatible` package, which OpenCode 1.18.33 bundles (nothing is installed at
run time for it), with `options.baseURL` set to this endpoint.

The script, one step per request of the main agent (the request that carries `tools`), chosen
by how many tool results the request already holds, so a retried request gets the same answer:

1. `todowrite` with two tasks (OpenCode's todo tool: `{content, status, priority}` items);
2. `write` creating `notes/plan.md` in the project;
3. `bash` running a command that fails (exit 1, `sv-boom: widget config missing` on stderr);
4. a final text holding `marker`.

Any other request (OpenCode's title agent: no tools) gets a short text answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .model_recorder import ModelRecorder, Recorded

MODEL = "fake-1"
PROVIDER = "scripted"
TODOS = [
    {"content": "Draft the widget plan in notes/plan.md", "status": "in_progress", "priority": "high"},
    {"content": "Check the widget config loads", "status": "pending", "priority": "medium"},
]
PLAN_FILE = "notes/plan.md"
PLAN_TEXT = "# Widget plan\n\n- load the widget config\n- report a missing config clearly\n"
FAILING_COMMAND = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\""
ERROR_LINE = "sv-boom: widget config missing"
TITLE = "Widget config plan"
SSE = "text/event-stream"


def provider_config(base_url: str) -> dict[str, Any]:
    """The `provider` entry of opencode.json that points OpenCode at `base_url` (use the model
    as `-m scripted/fake-1`)."""
    return {
        PROVIDER: {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Scripted",
            "options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-scripted-no-key"},
            "models": {MODEL: {"name": "Fake 1", "tool_call": True}},
        }
    }


class ScriptedOpenCode(ModelRecorder):
    """`with ScriptedOpenCode(project, marker) as model:`; `project` is where `write` puts
    the plan (OpenCode's write tool wants an absolute path)."""

    def __init__(self, project: Path, marker: str) -> None:
        super().__init__()
        self.project = project
        self.marker = marker

    def answer(self, request: Recorded) -> tuple[int, str, bytes]:
        if request.method != "POST" or not request.path.endswith("/chat/completions"):
            return 404, "application/json", b'{"error": {"message": "not found", "type": "not_found"}}'
        try:
            body = json.loads(request.body)
        except ValueError:
            return 400, "application/json", b'{"error": {"message": "bad json", "type": "invalid_request"}}'
        if not body.get("tools"):
            return 200, SSE, stream_text(TITLE)
        done = sum(1 for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "tool")
        if done == 0:
            return 200, SSE, stream_tool_call("call_sv_1", "todowrite", {"todos": TODOS})
        if done == 1:
            path = str(self.project / PLAN_FILE)
            return 200, SSE, stream_tool_call("call_sv_2", "write", {"filePath": path, "content": PLAN_TEXT})
        if done == 2:
            return (
                200,
                SSE,
                stream_tool_call(
                    "call_sv_3",
                    "bash",
                    {"command": FAILING_COMMAND, "description": "Check the widget config"},
                ),
            )
        return 200, SSE, stream_text(f"The plan is in {PLAN_FILE}; the config check failed. {self.marker}")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if finish is not None:
        chunk["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return chunk


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


def stream_text(text: str) -> bytes:
    """A streamed assistant text: the role, the text in two deltas, `finish_reason: stop`."""
    half = len(text) // 2
    return _sse(
        [
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"content": text[:half]}),
            _chunk({"content": text[half:]}),
            _chunk({}, "stop"),
        ]
    )


def stream_tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> bytes:
    """A streamed single tool call: id and name first, the arguments in two deltas, then
    `finish_reason: tool_calls`."""
    raw = json.dumps(arguments)
    half = len(raw) // 2
    first = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": raw[:half]},
    }
    return _sse(
        [
            _chunk({"role": "assistant", "content": None, "tool_calls": [first]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": raw[half:]}}]}),
            _chunk({}, "tool_calls"),
        ]
    )
