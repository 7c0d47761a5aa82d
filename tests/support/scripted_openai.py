"""A scripted OpenAI model endpoint: a `ModelRecorder` that, instead of refusing, plays a fixed
list of steps through the OpenAI Responses API the way Codex CLI speaks it (POST .../responses,
`stream: true`, Server-Sent Events). No model is involved: each step is one tool call or the
final assistant message, so a real client really runs the tools and writes its own session file.

    script = [plan([("Write the notes", "in_progress")]), write_file("notes/plan.md", "..."),
              run("python3 -c ..."), say("done: marker-123")]
    with ScriptedOpenAI(script, prompt_marker="sv-task") as model:
        ...  # a provider whose base_url is model.base_url + "/v1", wire_api = "responses"

Which step a request gets is read from the request itself: the one after the last of our calls
it carries an output for (or after our last final message it carries: the next turn of a resumed
session), and never one before the furthest any request got (a compaction drops the outputs
from the history sent next). A client that retries a request gets the same answer.

The abstract steps become whichever tool the request offers: Codex 0.171.0 offers `apply_patch`
as a freeform custom tool for some models (gpt-5.5) and not at all for unknown ones, its shell as
`exec_command` (unified exec), `shell_command` or `shell`, and `update_plan` only when
`[tools.update_plan] enabled = true`. Side requests get one short text answer: Codex's
compaction request (it offers `"tools": []`), a title request, POST .../responses/compact.

The Responses logic is the `responses_*` functions; a Chat Completions mode can sit beside it."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .model_recorder import ModelRecorder, Recorded

CALL_PREFIX = "call_sv_"  # our call ids: "call_sv_<step index>"
# The answer to any request that is not the scripted turn: a compaction summary, a title.
SIDE_ANSWER = "Scripted summary: the steps so far ran; continue with the next one."
_RUNNING = re.compile(r"Process running with session ID (\d+)")


@dataclass(frozen=True)
class Offer:
    """What a request gives a step to render itself against: the tools it offers (name -> the
    declaration) and its input items (the history so far)."""

    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class ToolStep:
    """One tool call: `render(offer)` -> (tool name, kind, payload), where kind "function" takes
    a JSON arguments object and "custom" a freeform string."""

    render: Callable[[Offer], tuple[str, str, Any]]
    label: str = ""


@dataclass(frozen=True)
class Say:
    """The final assistant message of the turn."""

    text: str


Step = ToolStep | Say


@dataclass(frozen=True)
class Usage:
    """What a response reports as used. A large count makes a client think its context is
    full, so with a low `model_auto_compact_token_limit` Codex compacts after that step."""

    input_tokens: int = 1200
    output_tokens: int = 40

    def as_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


# The script the capture tests play (the same facts as the other clients' scripted models).
PLAN = [
    ("Draft the widget plan", "completed"),
    ("Check the widget config", "in_progress"),
    ("Ship the widget", "pending"),
]
PLAN_PATH = "notes/plan.md"
PLAN_TEXT = "# Widget plan\n\n1. Check the config.\n"
FAILING_COMMAND = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\""
FAILURE_LINE = "sv-boom: widget config missing"


def checkpoint_script(marker: str) -> list[Step]:
    """A plan, a file, a failing command, a final message holding `marker`."""
    return [
        plan(PLAN, "Three steps."),
        write_file(PLAN_PATH, PLAN_TEXT),
        run(FAILING_COMMAND),
        say(f"Done for now; the widget config is missing. {marker}"),
    ]


# --- the abstract steps --------------------------------------------------------------------


def call(name: str, arguments: dict[str, Any] | str) -> ToolStep:
    """A call to one named tool as given: a dict is a function call's arguments, a string a
    custom tool's freeform input."""
    kind = "custom" if isinstance(arguments, str) else "function"
    return ToolStep(lambda offer: (name, kind, arguments), label=name)


def plan(items: Sequence[tuple[str, str]], explanation: str = "") -> ToolStep:
    """Codex's plan tool: the whole list, each step with its status."""
    arguments: dict[str, Any] = {"plan": [{"step": s, "status": st} for s, st in items]}
    if explanation:
        arguments["explanation"] = explanation
    return call("update_plan", arguments)


def add_file_patch(path: str, text: str) -> str:
    """An apply_patch envelope that creates `path` (relative to the session's cwd)."""
    lines = "".join(f"+{line}\n" for line in text.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def update_file_patch(path: str, old: str, new: str) -> str:
    """An apply_patch envelope that replaces the line `old` of `path` with `new`."""
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"


def patch(envelope: str, fallback: str = "") -> ToolStep:
    """apply_patch with `envelope`, freeform or JSON as offered; without apply_patch (a model
    Codex has no metadata for), the shell command `fallback`."""

    def render(offer: Offer) -> tuple[str, str, Any]:
        tool = offer.tools.get("apply_patch")
        if tool is not None and tool.get("type") == "custom":
            return "apply_patch", "custom", envelope
        if tool is not None:
            return "apply_patch", "function", {"input": envelope}
        if not fallback:
            raise AssertionError(f"the client offered no apply_patch: {sorted(offer.tools)}")
        return _shell(offer, fallback, 10_000)

    return ToolStep(render, label="apply_patch")


def write_file(path: str, text: str) -> ToolStep:
    """Create a file through apply_patch when offered, else the shell."""
    folder = path.rpartition("/")[0]
    mkdir = f"mkdir -p {shlex.quote(folder)} && " if folder else ""
    return patch(add_file_patch(path, text), f"{mkdir}printf %s {shlex.quote(text)} > {shlex.quote(path)}")


def run(command: str, yield_ms: int = 10_000) -> ToolStep:
    """Run a shell command through whichever shell tool was offered. With unified exec a
    command still running after `yield_ms` is left running; `poll()` then waits for it."""
    return ToolStep(lambda offer: _shell(offer, command, yield_ms), label=f"run {command}")


def poll(yield_ms: int = 10_000) -> ToolStep:
    """Wait on the unified-exec process the previous `run` left running (`write_stdin` with no
    characters), by the session ID its output named."""

    def render(offer: Offer) -> tuple[str, str, Any]:
        outputs = [str(i.get("output", "")) for i in offer.history if i.get("type") == "function_call_output"]
        found = [m.group(1) for text in outputs for m in [_RUNNING.search(text)] if m]
        if not found:
            raise AssertionError("poll(): no running process in the history")
        arguments = {"session_id": int(found[-1]), "chars": "", "yield_time_ms": yield_ms}
        return "write_stdin", "function", arguments

    return ToolStep(render, label="poll")


def say(text: str) -> Say:
    return Say(text)


def _shell(offer: Offer, command: str, yield_ms: int) -> tuple[str, str, Any]:
    """The shell call for `command`: `exec_command` (unified exec, what 0.171.0 offers),
    `shell_command` (one string) or the older `shell` (an argv)."""
    if "exec_command" in offer.tools:
        return "exec_command", "function", {"cmd": command, "yield_time_ms": yield_ms}
    if "shell_command" in offer.tools:
        return "shell_command", "function", {"command": command}
    if "shell" in offer.tools:
        return "shell", "function", {"command": ["bash", "-lc", command]}
    raise AssertionError(f"the client offered no shell tool: {sorted(offer.tools)}")


# --- the Responses API ---------------------------------------------------------------------


def responses_offer(body: dict[str, Any]) -> Offer:
    """The tools a request offers, by name (a namespace's tools under their own names too),
    and its input items."""
    tools: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        for inner in tool.get("tools") or []:
            if isinstance(inner, dict) and inner.get("name"):
                tools[str(inner["name"])] = inner
        if tool.get("name"):
            tools[str(tool["name"])] = tool
    history = [i for i in body.get("input") or [] if isinstance(i, dict)]
    return Offer(tools, history)


def responses_step(body: dict[str, Any], steps: Sequence[Step]) -> int:
    """The step after the last one the request's history shows done: our last call it carries
    an output for, or our last final message it carries (a resumed session's next turn)."""
    done = [-1]
    said: set[str] = set()
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        call_id = str(item.get("call_id", ""))
        number = call_id.removeprefix(CALL_PREFIX)
        if str(item.get("type", "")).endswith("_call_output") and call_id.startswith(CALL_PREFIX):
            done.append(int(number) if number.isdigit() else -1)
        elif item.get("type") == "message" and item.get("role") == "assistant":
            said.update(
                str(part.get("text", "")) for part in item.get("content") or [] if isinstance(part, dict)
            )
    done += [i for i, step in enumerate(steps) if isinstance(step, Say) and step.text in said]
    return max(done) + 1


def responses_is_scripted_turn(body: dict[str, Any], prompt_marker: str) -> bool:
    """Whether the request is the turn the script plays. Codex's compaction request offers no
    tools (`"tools": []`) and ends with its own summarization prompt; a title request, where a
    client sends one, does not carry the user's prompt."""
    if not body.get("tools"):
        return False
    return not prompt_marker or prompt_marker in json.dumps(body.get("input") or [])


def responses_item(step: Step, index: int, offer: Offer) -> dict[str, Any]:
    """The one output item of a step: a function call, a custom tool call or a message."""
    if isinstance(step, Say):
        return responses_message(step.text, index)
    name, kind, payload = step.render(offer)
    call_id = f"{CALL_PREFIX}{index}"
    if kind == "custom":
        item = {"type": "custom_tool_call", "id": f"ctc_{index}", "input": payload}
    else:
        item = {"type": "function_call", "id": f"fc_{index}", "arguments": json.dumps(payload)}
    return {**item, "call_id": call_id, "name": name, "status": "completed"}


def responses_message(text: str, index: int) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{index}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def responses_events(item: dict[str, Any], response_id: str, usage: Usage) -> Iterable[dict[str, Any]]:
    """The event sequence of one response holding one output item, as the API streams it."""
    response = {"id": response_id, "object": "response", "status": "in_progress", "output": []}
    yield {"type": "response.created", "response": response}
    yield {"type": "response.in_progress", "response": response}
    pending = {**item, "status": "in_progress"}
    if item["type"] == "message":
        pending["content"] = []
    yield {"type": "response.output_item.added", "output_index": 0, "item": pending}
    if item["type"] == "message":
        text = item["content"][0]["text"]
        where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        empty = {"type": "output_text", "text": "", "annotations": []}
        yield {"type": "response.content_part.added", **where, "part": empty}
        yield {"type": "response.output_text.delta", **where, "delta": text}
        yield {"type": "response.output_text.done", **where, "text": text}
        yield {"type": "response.content_part.done", **where, "part": item["content"][0]}
    yield {"type": "response.output_item.done", "output_index": 0, "item": item}
    done = {**response, "status": "completed", "output": [item], "usage": usage.as_json()}
    yield {"type": "response.completed", "response": done}


def responses_sse(events: Iterable[dict[str, Any]]) -> bytes:
    """Server-Sent Events: `event: <type>` and one `data:` line of JSON per event."""
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def responses_compact_answer() -> bytes:
    """The body of POST .../responses/compact (remote compaction): the history that replaces
    the old one. Codex uses it for OpenAI's own provider; a custom one compacts locally."""
    return json.dumps({"output": [responses_message(SIDE_ANSWER, 0)]}).encode()


# --- the endpoint --------------------------------------------------------------------------


class ScriptedOpenAI(ModelRecorder):
    """`with ScriptedOpenAI(steps) as model:`. `prompt_marker` (some text of the user's prompt)
    tells the scripted turn from side requests. `usage_at` maps a step index to the usage
    reported with that step instead of `usage` (to make a client compact right after it)."""

    def __init__(
        self,
        steps: Sequence[Step],
        prompt_marker: str = "",
        usage: Usage | None = None,
        usage_at: dict[int, Usage] | None = None,
    ) -> None:
        super().__init__()
        self.steps = list(steps)
        self.prompt_marker = prompt_marker
        self.usage = usage or Usage()
        self.usage_at = usage_at or {}
        self.reached = 0  # the furthest step any request was at
        self.errors: list[str] = []  # requests the script had no step for

    def answer(self, request: Recorded) -> tuple[int, str, bytes]:
        if request.method != "POST" or "/responses" not in request.path:
            return super().answer(request)
        if request.path.rstrip("/").endswith("/compact"):
            return 200, "application/json", responses_compact_answer()
        try:
            body = json.loads(request.body or "{}")
        except ValueError:
            return super().answer(request)
        return 200, "text/event-stream", responses_sse(self._responses_turn(body))

    def _responses_turn(self, body: dict[str, Any]) -> Iterable[dict[str, Any]]:
        with self._lock:
            index = self.reached = max(self.reached, responses_step(body, self.steps))
            response_id = f"resp_sv_{len(self.requests)}"
        if not responses_is_scripted_turn(body, self.prompt_marker):
            return responses_events(responses_message(SIDE_ANSWER, index), response_id, self.usage)
        if index >= len(self.steps):
            self.errors.append(f"a request past the script's end (step {index})")
            return responses_events(responses_message("(script ended)", index), response_id, self.usage)
        item = responses_item(self.steps[index], index, responses_offer(body))
        return responses_events(item, response_id, self.usage_at.get(index, self.usage))


# --- pointing Codex CLI at it --------------------------------------------------------------

# A model Codex 0.171.0 has metadata for, so it offers apply_patch (freeform); for an unknown
# slug ("gpt-5") it falls back to metadata without apply_patch and warns.
CODEX_MODEL = "gpt-5.5"


def codex_config(model: ScriptedOpenAI, *, auto_compact_limit: int | None = None, existing: str = "") -> str:
    """A ~/.codex/config.toml whose model provider is the scripted endpoint (no OpenAI login,
    no key) and that offers the plan tool, which 0.171.0 does only when `[tools.update_plan]
    enabled = true`; `existing` (what `connect` wrote) is kept between the top-level keys and
    the new tables. With `auto_compact_limit`, Codex compacts once a response reports more
    tokens used than that (see `Usage`)."""
    top = f'model_provider = "scripted"\nmodel = "{CODEX_MODEL}"\n'
    if auto_compact_limit is not None:
        top += f"model_auto_compact_token_limit = {auto_compact_limit}\n"
    provider = f'name = "scripted"\nbase_url = "{model.base_url}/v1"\nwire_api = "responses"\n'
    return f"{top}\n{existing}\n[model_providers.scripted]\n{provider}\n[tools.update_plan]\nenabled = true\n"
