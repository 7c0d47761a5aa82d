"""The Cline CLI (the real `cline` 3.x from npm) against a real server, with no Cline account:
`cline auth -p openai-compatible -b <our endpoint>/v1` with a dummy key, then a one-shot
`cline "<prompt>"` (stdin closed). Each run leaves a `cline --cline-hub-daemon` behind: stopped
by its pid (its argv names the project folder).

`connect cline-cli --hooks` writes ~/.cline/data/settings/cline_mcp_settings.json, a plugin
whose rule puts the saved session into the system prompt of the first model request, and
TaskComplete / PreCompact / SessionShutdown scripts that save a checkpoint from Cline's own
session files (local/setup/hook_files.py says why a plugin and not Cline's TaskStart hook)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from sessionvault.local.hook.capture import cline as capture

from ..conftest import make_user
from ..support.model_recorder import ModelRecorder
from ..support.scripted_chat import ScriptedChat, cline_script
from ..support.scripted_gemini import FAILURE_LINE, PLAN_PATH
from .conftest import Env, ToolCalls, save_marked_session

PROMPT = "Plan the widget work, write notes/plan.md, then check the widget config."


def cline(env: Env) -> str:
    return str(env.bin / "cline")


def stop_hub(env: Env) -> None:
    """The hub daemon a run left for this project, by pid (it may start a moment after)."""
    for _ in range(10):
        found = subprocess.run(
            ["pgrep", "-f", f"cline-hub-daemon --cwd {env.project} "],
            capture_output=True,
            text=True,
            check=False,
        )
        for pid in found.stdout.split():
            os.kill(int(pid), signal.SIGTERM)
        if found.stdout.strip():
            return
        time.sleep(0.2)


def run_cline(env: Env, key: str, model: ModelRecorder, prompt: str) -> subprocess.CompletedProcess[str]:
    """`cline auth` at `model`, then a one-shot run of `prompt` in the project."""
    auth = [
        "auth",
        "-p",
        "openai-compatible",
        "-k",
        "dummy-not-a-key",
        "-m",
        "scripted",
        "-b",
        model.base_url + "/v1",
    ]
    done = env.run([cline(env), *auth], key)
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        return env.run([cline(env), prompt], key, timeout=180)
    finally:
        stop_hub(env)


def test_the_plugin_puts_the_saved_session_into_the_first_request(
    server, runtime, client_env: Env, model: ModelRecorder, tool_calls: ToolCalls
) -> None:
    user = make_user(runtime)
    marker = save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("cline-cli", server.url, user.key, "--hooks")
    assert (client_env.home / ".cline" / "plugins" / "sessionvault.js").is_file()
    assert (client_env.home / ".cline" / "hooks" / "TaskComplete.sh").stat().st_mode & 0o111
    done = run_cline(client_env, user.key, model, "Say hello.")
    context = f"{model.summary()}\n{done.stdout}\n{done.stderr}"
    assert tool_calls.calls("load_session", user.id), context  # the plugin ran the hook
    assert model.bodies() and json.dumps(marker)[1:-1] in model.bodies()[0], context
    listed = [r for r in tool_calls.calls("tools/list", str(user.id)) if getattr(r, "status", None) == 200]
    assert listed, context  # the MCP settings connect Cline to the server with the key


def test_a_run_leaves_a_session_the_reader_understands(server, runtime, client_env: Env) -> None:
    user = make_user(runtime)
    save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("cline-cli", server.url, user.key, "--hooks")
    payloads = client_env.home / "task-complete.jsonl"
    log = client_env.home / ".cline" / "hooks" / "TaskComplete"  # beside ours (TaskComplete.sh)
    log.write_text(f"#!/bin/sh\ncat >> '{payloads}'; echo >> '{payloads}'\n")
    log.chmod(0o755)
    marker = f"sv-marker-{os.urandom(6).hex()}"
    (client_env.project / "notes").mkdir()
    with ScriptedChat(cline_script(marker, client_env.project)) as model:
        done = run_cline(client_env, user.key, model, PROMPT)
    assert done.returncode == 0 and marker in done.stdout, f"{model.summary()}\n{done.stdout}{done.stderr}"
    payload = capture.adapt(json.loads(payloads.read_text().splitlines()[-1]))
    assert payload["hook_event_name"] == "TaskComplete" and payload["cwd"] == str(client_env.project)
    found = capture.locate(client_env.home, client_env.project)
    assert found is not None and found == capture.locate(client_env.home, Path("/x"), payload["session_id"])
    read = capture.read(found)
    assert read.session_id == payload["session_id"] and read.cwd == str(client_env.project)
    assert list(read.asks) == [PROMPT] and list(read.files) == [PLAN_PATH]
    [failure] = read.failures
    assert failure.startswith("python3 -c") and failure.endswith(f": {FAILURE_LINE}"), failure
    assert marker in read.last_message
