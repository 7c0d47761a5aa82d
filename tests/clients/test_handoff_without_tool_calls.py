"""A handoff with zero tool calls, between real CLIs and no model: the source client runs a
scripted session (a task, a written file, a failing command, a final message) against a local
endpoint that speaks its provider's API; its own end-of-work hooks (installed by `connect
--hooks`) turn its own transcript into a checkpoint on the real server. Then a second real
client, started in another clone of the same repo whose remote is spelled another way, gets
that checkpoint into its first model request through its session-start hook. No model calls
save_session or load_session: the scripted ones never name a SessionVault tool.

Pairs: Claude Code -> Gemini CLI, Codex -> Claude Code, Qwen Code -> Codex."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessionvault.core import records

from ..conftest import make_user
from ..support import scripted_chat, scripted_openai
from ..support.model_recorder import ModelRecorder
from ..support.scripted_anthropic import ScriptedAnthropic, checkpoint_script
from .conftest import Env, ToolCalls
from .test_capture_codex import EXEC_FLAGS, trust_all_hooks
from .test_claude_code import approve_project_servers, claude
from .test_codex import codex, use_recorder_as_model
from .test_gemini import NO_MODEL, gemini, trust_folder
from .test_qwen import NO_MODEL as QWEN_NO_MODEL
from .test_qwen import connect_qwen, qwen

TASK = "Write the widget plan"
COMMAND = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\""
FAILURE = f"{COMMAND}: sv-boom: widget config missing"
PLAN_PATH = "notes/plan.md"
# The step the Codex and Qwen Code scripts leave in progress (the shared capture scripts).
CHECK_STEP = "Check the widget config"
SSH_REMOTE = "git@github.com:Acme/Widget.git"
HTTPS_REMOTE = "https://github.com/acme/widget"
REPO = "github.com/acme/widget"
PROMPT = "Plan the widget work, write notes/plan.md, then check the widget config."
# Claude Code against a local endpoint: a dummy key, no updater, no traffic but the model's.
CLAUDE_ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-dummy-not-a-key",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
QWEN_MODEL_ENV = {"OPENAI_API_KEY": "dummy-not-a-key", "OPENAI_MODEL": "qwen3-coder-plus"}


# --- the repo, twice --------------------------------------------------------------------------


def git(path: Path, *args: str) -> None:
    who = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "-C", str(path), *who, *args], check=True, capture_output=True, timeout=30)


def make_clone(path: Path, remote: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, timeout=30)
    git(path, "remote", "add", "origin", remote)
    (path / "README.md").write_text("widget\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return path


def other_clone(source: Env, tmp_path: Path, client: str) -> Env:
    """The target's own HOME and a second clone of the repo, its remote spelled the https way."""
    env = Env(
        home=tmp_path / f"{client}-home",
        project=make_clone(tmp_path / f"{client}-clone", HTTPS_REMOTE),
        bin=source.bin,
    )
    env.home.mkdir()
    return env


# --- what the server holds, and what the models were sent --------------------------------------


def checkpoints(runtime: Any, user: Any) -> list[dict[str, Any]]:
    listed = runtime.vault.list(user.principal, records.parse(records.ListArgs, {"repo": REPO}))
    return [e for e in listed["sessions"] if e.get("automatic")]


def the_checkpoint(runtime: Any, user: Any, client: str, marker: str, step: str, out: str) -> dict[str, Any]:
    """The one automatic checkpoint for the repo, saved by `client`'s hooks: its record, which
    holds the plan step `step` in progress, the file, the failing command and `marker`."""
    [saved] = checkpoints(runtime, user)
    record: dict[str, Any] = runtime.vault.load(
        user.principal, records.parse(records.LoadArgs, {"name": saved["name"]})
    )
    assert saved["name"].startswith(f"auto/{client}/") and record["client"] == client, out
    assert marker in record["summary"] and f"[doing] {step}" in record["plan"], record
    assert PLAN_PATH in record["files"] and FAILURE in record["errors"], record
    return record


def sessionvault_tool_uses(bodies: list[str]) -> list[str]:
    """The SessionVault tools a model called, as each client sends its history back with every
    request: Anthropic `tool_use` blocks and Chat Completions `tool_calls` in `messages`,
    Responses `function_call` / `custom_tool_call` items in `input`. Each client defers MCP
    tools: Claude Code and Codex then call one by name (`mcp__sessionvault__<tool>`, or Codex's
    `namespace` `mcp__sessionvault`), Qwen Code through its `tool_call` tool, the deferred
    tool's name in the arguments."""
    called = []
    for body in bodies:
        for call in _tool_calls(body):
            name = "__".join(str(part) for part in (call.get("namespace"), call.get("name")) if part)
            if call.get("name") == "tool_call":
                name += f" {_arguments(call).get('name')}"
            if "sessionvault" in name:
                called.append(name)
    return called


def _tool_calls(body: str) -> list[dict[str, Any]]:
    """The tool calls in a request's history, whatever the API."""
    try:
        data = json.loads(body)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    calls: list[Any] = []
    for message in data.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            calls += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        if isinstance(message, dict):
            calls += [c.get("function") for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    calls += [
        item
        for item in data.get("input") or []
        if isinstance(item, dict) and item.get("type") in ("function_call", "custom_tool_call")
    ]
    return [c for c in calls if isinstance(c, dict)]


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    """A call's arguments: an object (Anthropic `input`) or a JSON string (OpenAI)."""
    raw = call.get("arguments", call.get("input"))
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, dict) else {}


def offered_but_not_called(model: ModelRecorder, out: str) -> None:
    """The source's model had SessionVault's tools on offer (deferred, by name) and called none."""
    assert model.saw("mcp__sessionvault"), out
    assert not sessionvault_tool_uses(model.bodies()), out


# --- trusting Codex's hooks -------------------------------------------------------------------


def run_claude_code(env: Env, key: str, marker: str) -> str:
    """`claude -p` in the project, its model scripted; returns what it printed."""
    model = ScriptedAnthropic(checkpoint_script(marker, task=TASK, command=COMMAND))
    with model:
        done = env.run(
            [claude(env), "-p", "Plan the widget.", "--permission-mode", "bypassPermissions"],
            key,
            ANTHROPIC_BASE_URL=model.base_url,
            **CLAUDE_ENV,
            IS_SANDBOX="1",  # bypassPermissions is refused to root without it (test containers)
            CLAUDE_CODE_ENABLE_TODO_TOOLS="1",  # the default model of 2.1.332 gets no task tool
        )
    out = f"{done.stdout}\n{done.stderr}\n{model.summary()}"
    assert done.returncode == 0 and marker in done.stdout, out
    offered_but_not_called(model, out)
    return out


def run_codex(env: Env, url: str, key: str, marker: str) -> str:
    """`connect codex --hooks`, every hook trusted (Codex skips untrusted ones silently), then
    `codex exec` in the project, its model the scripted Responses endpoint with the plan tool on;
    returns what it printed."""
    env.connect("codex", url, key, "--hooks")
    hooks = json.loads((env.home / ".codex" / "hooks.json").read_text())["hooks"]
    assert {"SessionStart", "Stop", "PreCompact", "SessionEnd"} <= set(hooks), hooks
    model = scripted_openai.ScriptedOpenAI(scripted_openai.checkpoint_script(marker))
    with model:
        config = env.home / ".codex" / "config.toml"
        config.write_text(scripted_openai.codex_config(model, existing=config.read_text()))
        events = {h["eventName"] for h in trust_all_hooks(env, key)}
        assert {"sessionStart", "stop", "preCompact", "sessionEnd"} <= events, events
        done = env.run([codex(env), "exec", *EXEC_FLAGS, PROMPT], key, timeout=180)
    out = f"{done.stdout}\n{done.stderr}\n{model.summary()}"
    assert done.returncode == 0 and marker in done.stdout and not model.errors, f"{model.errors}\n{out}"
    offered_but_not_called(model, out)
    return out


def run_qwen(env: Env, url: str, key: str, marker: str) -> str:
    """`connect qwen --hooks`, OpenAI auth and the todo tool on, then a one-shot `qwen` run in
    the project, its model the scripted Chat Completions endpoint; returns what it printed. A
    one-shot run ends without SessionEnd: the checkpoint comes from Stop (once per turn)."""
    connect_qwen(env, url, key, "--hooks")
    path = env.home / ".qwen" / "settings.json"
    data: dict[str, Any] = json.loads(path.read_text())
    assert {"SessionStart", "Stop", "PreCompact", "SessionEnd"} <= set(data["hooks"]), data["hooks"]
    data["security"] = {"auth": {"selectedType": "openai"}}
    data["tools"] = {"todoWrite": {"enabled": True}}
    path.write_text(json.dumps(data, indent=2))
    with scripted_chat.ScriptedChat(scripted_chat.checkpoint_script(marker, env.project)) as model:
        done = env.run(
            [qwen(env), PROMPT, "--approval-mode=yolo"],
            key,
            OPENAI_BASE_URL=model.base_url + "/v1",
            **QWEN_MODEL_ENV,
            **QWEN_NO_MODEL,
        )
    out = f"{done.stdout}\n{done.stderr}\n{model.summary()}"
    assert done.returncode == 0 and marker in done.stdout, out
    offered_but_not_called(model, out)
    return out


# --- the targets: the checkpoint in the first model request, through the session-start hook -----


def assert_handed_over(env: Env, model: ModelRecorder, seen: bool, source: str) -> None:
    # The checkpoint's own name (auto/<source>/<id>), whatever heading the hook puts above it.
    out = f"{model.summary()}\n{env.last_output}"
    assert seen and model.saw(f"auto/{source}/"), out
    assert not sessionvault_tool_uses(model.bodies()), out


def select_auth(settings: Path, kind: str) -> None:
    """The auth a Gemini-family CLI (Gemini CLI, Qwen Code) uses without asking, in its settings."""
    data = json.loads(settings.read_text())
    data["security"] = {"auth": {"selectedType": kind}}
    settings.write_text(json.dumps(data, indent=2))


def gemini_sees(env: Env, url: str, key: str, marker: str, source: str) -> None:
    env.connect("gemini", url, key, "--hooks")
    trust_folder(env)
    select_auth(env.home / ".gemini" / "settings.json", "gemini-api-key")
    with ModelRecorder() as model:
        seen, _ = env.until(
            [gemini(env), "-p", "hi"],
            key,
            lambda: model.saw(marker),
            timeout=90,
            GOOGLE_GEMINI_BASE_URL=model.base_url,
            **NO_MODEL,
        )
        assert_handed_over(env, model, seen, source)


def claude_code_sees(env: Env, url: str, key: str, marker: str, source: str) -> None:
    env.connect("claude-code", url, key, "--hooks")
    approve_project_servers(env)
    with ModelRecorder() as model:
        seen, _ = env.until(
            [claude(env), "-p", "hi"],
            key,
            lambda: model.saw(marker),
            timeout=90,
            ANTHROPIC_BASE_URL=model.base_url,
            **CLAUDE_ENV,
            CLAUDE_CODE_MAX_RETRIES="0",
            API_TIMEOUT_MS="3000",
        )
        assert_handed_over(env, model, seen, source)


def codex_sees(env: Env, url: str, key: str, marker: str, source: str) -> None:
    env.connect("codex", url, key, "--hooks")
    with ModelRecorder() as model:
        use_recorder_as_model(env, model)
        trust_all_hooks(env, key)
        seen, _ = env.until(
            [codex(env), "exec", "--skip-git-repo-check", "hi"], key, lambda: model.saw(marker), timeout=90
        )
        assert_handed_over(env, model, seen, source)


def qwen_sees(env: Env, url: str, key: str, marker: str, source: str) -> None:
    connect_qwen(env, url, key, "--hooks")
    select_auth(env.home / ".qwen" / "settings.json", "openai")
    with ModelRecorder() as model:
        seen, _ = env.until(
            [qwen(env), "-p", "hi"],
            key,
            lambda: model.saw(marker),
            timeout=90,
            OPENAI_BASE_URL=model.base_url + "/v1",
            **QWEN_MODEL_ENV,
            **QWEN_NO_MODEL,
        )
        assert_handed_over(env, model, seen, source)


# --- the pairs ---------------------------------------------------------------------------------


def test_claude_code_hands_over_to_gemini_cli_with_no_tool_call(
    server, runtime, client_env: Env, tool_calls: ToolCalls, tmp_path: Path
) -> None:
    user = make_user(runtime)
    make_clone(client_env.project, SSH_REMOTE)
    client_env.connect("claude-code", server.url, user.key, "--hooks")
    settings = json.loads((client_env.home / ".claude" / "settings.json").read_text())
    assert {"Stop", "PreCompact", "SessionEnd"} <= set(settings["hooks"]), settings
    marker = f"zero-call-marker-{os.urandom(6).hex()}"
    out = run_claude_code(client_env, user.key, marker)
    the_checkpoint(runtime, user, "claude-code", marker, TASK, out)
    # Every save came from a hook (checkpoint_session, a tool no model is offered).
    assert tool_calls.calls("checkpoint_session", user.id), out

    gemini_sees(other_clone(client_env, tmp_path, "gemini"), server.url, user.key, marker, "claude-code")


# Each pair: the source's run, the id its checkpoints carry, the clone the target starts in, and
# the target that must see the checkpoint.
PAIRS = {
    "codex-to-claude-code": (run_codex, "codex", "claude", claude_code_sees),
    "qwen-code-to-codex": (run_qwen, "qwen", "codex", codex_sees),
    # Qwen Code as the target too: every capture client is a source and a target somewhere.
    "codex-to-qwen-code": (run_codex, "codex", "qwen", qwen_sees),
}


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_a_client_hands_over_to_another_with_no_tool_call(
    pair: str, server, runtime, client_env: Env, tool_calls: ToolCalls, tmp_path: Path
) -> None:
    run, source, clone, sees = PAIRS[pair]
    user = make_user(runtime)
    make_clone(client_env.project, SSH_REMOTE)
    marker = f"zero-call-marker-{os.urandom(6).hex()}"
    out = run(client_env, server.url, user.key, marker)
    the_checkpoint(runtime, user, source, marker, CHECK_STEP, out)
    assert tool_calls.calls("checkpoint_session", user.id), out

    sees(other_clone(client_env, tmp_path, clone), server.url, user.key, marker, source)


# --- the check itself --------------------------------------------------------------------------


def test_the_tool_call_check_sees_each_clients_call_shape() -> None:
    """`sessionvault_tool_uses` finds a SessionVault call in each client's history shape (so the
    handoffs' "no call" means something), and nothing in the scripted calls of the others."""

    def body(**history: Any) -> str:
        return json.dumps(history)

    anthropic = [
        {"role": "assistant", "content": [{"type": "tool_use", "name": "mcp__sessionvault__load_session"}]}
    ]
    chat = [{"role": "assistant", "tool_calls": [{"function": {"name": "mcp__sessionvault__save_session"}}]}]
    wrapped = {"name": "tool_call", "arguments": json.dumps({"name": "mcp__sessionvault__load_session"})}
    responses = [
        {"type": "function_call", "namespace": "mcp__sessionvault", "name": "load_session"},
        {"type": "custom_tool_call", "name": "mcp__sessionvault__list_sessions"},
    ]
    assert sessionvault_tool_uses(
        [
            body(messages=anthropic),
            body(messages=chat),
            body(messages=[{"role": "assistant", "tool_calls": [{"function": wrapped}]}]),
            body(input=responses),
            "not json",
        ]
    ) == [
        "mcp__sessionvault__load_session",
        "mcp__sessionvault__save_session",
        "tool_call mcp__sessionvault__load_session",
        "mcp__sessionvault__load_session",
        "mcp__sessionvault__list_sessions",
    ]
    ours = [
        {"type": "function_call", "name": "update_plan"},
        {"type": "custom_tool_call", "name": "apply_patch"},
    ]
    assert not sessionvault_tool_uses(
        [body(input=ours), body(messages=[{"role": "user", "content": "sessionvault"}])]
    )
