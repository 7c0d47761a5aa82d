"""A scripted OpenAI-compatible model for the real-client tier: a `ModelRecorder` that answers
Chat Completions the way Qwen Code (and other OpenAI-protocol clients) call it, playing a fixed
list of steps (`Call`, `Say` from scripted_gemini) in the main conversation, so a real `qwen -p`
run really calls its tools and writes a real session file, with no model behind it.

- `POST <base>/chat/completions` with `"stream": true`: the step, as Server-Sent Events
  (`chat.completion.chunk`s: `delta.tool_calls` or `delta.content`, then `finish_reason` and
  `usage`, then `data: [DONE]`);
- the same without `stream` (side calls: a session title, a next-speaker check, a summary):
  one `chat.completion` whose text is JSON when the request asks for JSON, else a short text;
- `GET <base>/models`: one model.

Step n's tool call has the id `call_sv-<tag>-<n>` (a tag per script); the step a request gets is
one past the newest of the script's tool results (`role: "tool"`, `tool_call_id`) in its
messages, so retries, compressed histories and resumed sessions get the right step and the
script keeps no state. A request whose system prompt asks for a `<state_snapshot>` (Qwen Code
streams its history compression too) gets a summary instead of a step."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .model_recorder import ModelRecorder, Recorded
from .scripted_gemini import FAILING_COMMAND, PLAN_PATH, SNAPSHOT, Call, Say, Step, played, step_id

__all__ = ["Call", "Say", "ScriptedChat", "Step", "checkpoint_script"]

QWEN_TODOS = [
    {"id": "1", "content": "Draft the widget plan", "status": "completed"},
    {"id": "2", "content": "Check the widget config", "status": "in_progress"},
    {"id": "3", "content": "Ship the widget", "status": "pending"},
]


def checkpoint_script(marker: str, project: Path) -> list[Step]:
    """The capture tests' script in Qwen Code's tools: a todo list (`todo_write`, enabled by
    `tools.todoWrite.enabled`), a file (`write_file` takes only absolute paths: `project`'s),
    a failing command, a final text holding `marker`."""
    plan = str(project / PLAN_PATH)
    return [
        Call("todo_write", {"todos": QWEN_TODOS}),
        Call("write_file", {"file_path": plan, "content": "# Widget plan\n\n1. Check the config.\n"}),
        Call("run_shell_command", {"command": FAILING_COMMAND, "description": "Check the widget config"}),
        Say(f"Done for now; the widget config is missing. {marker}"),
    ]


COPILOT_STATUS = {"completed": "done"}  # its todos table says done; the rest as Qwen's


def copilot_script(marker: str, project: Path, compact: bool = False) -> list[Step]:
    """The capture tests' script in GitHub Copilot CLI's tools: its task list (rows its `sql`
    tool inserts into the session's `todos` table), a file (`create`, an absolute path), a
    failing command (`bash`), a final text holding `marker`. `compact`: the file write's reply
    reports a nearly full context, so Copilot CLI compacts the history before the next step."""
    rows = ", ".join(
        f"('t{n}', '{t['content']}', '{COPILOT_STATUS.get(t['status'], t['status'])}')"
        for n, t in enumerate(QWEN_TODOS, 1)
    )
    plan = str(project / PLAN_PATH)
    return [
        Call(
            "sql",
            {
                "description": "Insert widget todos",
                "query": f"INSERT INTO todos (id, title, status) VALUES {rows}",
            },
        ),
        Call(
            "create",
            {"path": plan, "file_text": "# Widget plan\n\n1. Check the config.\n"},
            context_tokens=127_000 if compact else 0,
        ),
        Call(
            "bash", {"command": FAILING_COMMAND, "description": "Check the widget config", "initial_wait": 30}
        ),
        Say(f"Done for now; the widget config is missing. {marker}"),
    ]


def droid_script(marker: str, project: Path, compact: bool = False) -> list[Step]:
    """The capture tests' script in Factory Droid's tools: a file (`Create`), a failing command
    (`Execute`, whose summary must be 3-8 words), a final text holding `marker`. No task list:
    `droid exec` 0.225.2 does not offer its TodoWrite tool to the model (a call fails with
    "Tool TodoWrite is registered but is not available for the active model or session")."""
    plan = str(project / PLAN_PATH)
    command = {
        "summary": "Check the widget config",
        "command": FAILING_COMMAND,
        "riskLevel": "low",
        "riskLevelReason": "Reads a config",
    }
    return [
        Call(
            "Create",
            {"file_path": plan, "content": "# Widget plan\n\n1. Check the config.\n"},
            context_tokens=190_000 if compact else 0,
        ),
        Call("Execute", command),
        Say(f"Done for now; the widget config is missing. {marker}"),
    ]


def cline_script(marker: str, project: Path) -> list[Step]:
    """The capture tests' script in Cline 3's tools: a file (`editor` creates a missing file from
    `new_text`; an absolute path), a failing command (`run_commands`), a final text holding
    `marker`. No task list: Cline 3's CLI has no todo tool, and its `team_task` list keeps the
    run going ("You still have team obligations") until every task is completed."""
    plan = str(project / PLAN_PATH)
    return [
        Call("editor", {"path": plan, "new_text": "# Widget plan\n\n1. Check the config.\n"}),
        Call("run_commands", {"commands": [FAILING_COMMAND]}),
        Say(f"Done for now; the widget config is missing. {marker}"),
    ]


KILO_TODOS = [{**t, "priority": "medium"} for t in QWEN_TODOS]  # OpenCode's todowrite items


def kilo_script(marker: str, project: Path) -> list[Step]:
    """The capture tests' script in Kilo Code's tools (OpenCode's): a todo list (`todowrite`),
    a file (`write`, an absolute `filePath`), a failing command (`bash`), a final text."""
    plan = str(project / PLAN_PATH)
    return [
        Call("todowrite", {"todos": KILO_TODOS}),
        Call("write", {"filePath": plan, "content": "# Widget plan\n\n1. Check the config.\n"}),
        Call("bash", {"command": FAILING_COMMAND, "description": "Check the widget config"}),
        Say(f"Done for now; the widget config is missing. {marker}"),
    ]


def kilo_config(model: ModelRecorder) -> dict[str, Any]:
    """~/.config/kilo/kilo.json's provider `scripted` (model `m`) at `model`: the bundled
    @ai-sdk/openai-compatible package, a dummy key."""
    options = {"baseURL": model.base_url + "/v1", "apiKey": "dummy-not-a-key"}
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Scripted",
        "options": options,
        "models": {"m": {"name": "m"}},
    }
    return {"provider": {"scripted": provider}}


def result_ids(body: dict[str, Any]) -> list[str]:
    """The `tool_call_id`s of the tool results in a request's messages, oldest first."""
    messages = body.get("messages") or []
    return [
        str(m.get("tool_call_id", "")) for m in messages if isinstance(m, dict) and m.get("role") == "tool"
    ]


def _usage(step: Step | None, request_chars: int) -> dict[str, int]:
    prompt = (step.context_tokens if step else 0) or max(1, request_chars // 4)
    return {"prompt_tokens": prompt, "completion_tokens": 8, "total_tokens": prompt + 8}


def _chunk(model: str, delta: dict[str, Any], finish: str | None, **more: Any) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time())}
    return f"data: {json.dumps({**body, 'model': model, 'choices': [choice], **more})}\n\n"


def stream_events(step: Step, call_id: str, model: str, usage: dict[str, int]) -> bytes:
    """One step as a Chat Completions stream."""
    if isinstance(step, Call):
        call = {"index": 0, "id": call_id, "type": "function"}
        call["function"] = {"name": step.name, "arguments": json.dumps(step.args)}
        delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        delta, finish = {"role": "assistant", "content": step.text}, "stop"
    events = _chunk(model, delta, None) + _chunk(model, {}, finish) + _chunk(model, {}, None, usage=usage)
    return (events + "data: [DONE]\n\n").encode()


# GitHub Copilot CLI's compaction request ends with a user message saying so.
COPILOT_COMPACTION = "The history is being compacted"


def is_compression(body: dict[str, Any]) -> bool:
    """Whether a request asks for a history summary: its system prompt wants a <state_snapshot>
    (Qwen Code), or its last message says the history is being compacted (Copilot CLI)."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    system = [m for m in messages if m.get("role") == "system"]
    last = messages[-1:] if messages and messages[-1].get("role") == "user" else []
    return "<state_snapshot>" in json.dumps(system) or COPILOT_COMPACTION in json.dumps(last)


def wants_json(body: dict[str, Any]) -> bool:
    text = json.dumps(body.get("response_format") or "") + json.dumps((body.get("messages") or [])[-1:])
    return "json" in text.lower()


def side_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A non-streamed completion: a summary for a compression call, JSON where asked, a title."""
    asked = json.dumps(body.get("messages") or [])
    if is_compression(body) or "state_snapshot" in asked:
        text = SNAPSHOT
    elif wants_json(body):
        text = json.dumps({"next_speaker": "user", "reasoning": "scripted", "title": "Widget work"})
    else:
        text = "Widget work"
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "scripted")),
        "choices": [choice],
        "usage": _usage(None, len(asked)),
    }


def _json(body: str) -> dict[str, Any]:
    try:
        value = json.loads(body or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class ScriptedChat(ModelRecorder):
    """`with ScriptedChat(steps) as model:` then OPENAI_BASE_URL=model.base_url + "/v1"."""

    def __init__(self, steps: Sequence[Step]) -> None:
        super().__init__()
        if not steps:
            raise ValueError("a script needs at least one step")
        self.steps = list(steps)
        self.tag = os.urandom(3).hex()  # this script's call ids: call_sv-<tag>-<step>

    def stream(self, body: dict[str, Any], request_chars: int) -> bytes:
        index = min(played(result_ids(body), self.tag), len(self.steps) - 1)
        step: Step = Say(SNAPSHOT) if is_compression(body) else self.steps[index]
        call_id = "call_" + step_id(self.tag, index)
        return stream_events(step, call_id, str(body.get("model", "scripted")), _usage(step, request_chars))

    def answer(self, request: Recorded) -> tuple[int, str, bytes]:
        path = request.path.split("?", 1)[0]
        body = _json(request.body)
        if path.endswith("/chat/completions") and body.get("stream"):
            return 200, "text/event-stream", self.stream(body, len(request.body))
        if path.endswith("/chat/completions"):
            return 200, "application/json", json.dumps(side_answer(body)).encode()
        if path.endswith("/models"):
            models = {"object": "list", "data": [{"id": "qwen3-coder-plus", "object": "model"}]}
            return 200, "application/json", json.dumps(models).encode()
        return super().answer(request)

    def conversation_requests(self) -> list[dict[str, Any]]:
        """The bodies of the streamed (main conversation) requests, parsed."""
        with self._lock:
            bodies = [_json(r.body) for r in self.requests if r.path.endswith("/chat/completions")]
        return [b for b in bodies if b.get("stream")]
