"""Factory Droid (the real `droid`, npm's @factory/cli-linux-x64: the @factory/cli wrapper's
version 0.225.2 is not on npm, its platform package is) against a real server, with no Factory
account: a `customModels` entry in ~/.factory/settings.json (provider
generic-chat-completion-api) points `droid exec -m custom:scripted` at an OpenAI-compatible
endpoint of our own with a dummy key.

`connect droid --hooks` writes ~/.factory/mcp.json and Claude Code's hook shape into
~/.factory/settings.json; a `droid exec` run offers our tools, its SessionStart hook puts the
saved session into the first model request, and its end-of-work hooks (Stop, SessionEnd) save a
checkpoint that the reader builds from the session file it wrote."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sessionvault.local.hook.capture import droid as capture

from ..conftest import make_user
from ..support.model_recorder import ModelRecorder
from ..support.scripted_chat import ScriptedChat, droid_script
from ..support.scripted_gemini import FAILURE_LINE, PLAN_PATH
from .conftest import Env, ToolCalls, save_marked_session

PROMPT = "Plan the widget work, write notes/plan.md, then check the widget config."
EXEC = ["exec", "--auto", "low", "-m", "custom:scripted"]


def droid(env: Env) -> str:
    """The platform package's binary: it has no entry in node_modules/.bin."""
    return str(env.bin.parent / "@factory" / "cli-linux-x64" / "bin" / "droid")


def use_model(env: Env, model: ModelRecorder) -> None:
    """A custom model in ~/.factory/settings.json at `model`, everything else kept."""
    path = env.home / ".factory" / "settings.json"
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    data["customModels"] = [
        {
            "model": "scripted",
            "displayName": "Scripted",
            "baseUrl": model.base_url + "/v1",
            "apiKey": "dummy-not-a-key",
            "provider": "generic-chat-completion-api",
            "maxOutputTokens": 4096,
        }
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def test_the_session_start_hook_puts_the_saved_session_into_the_first_request(
    server, runtime, client_env: Env, model: ModelRecorder, tool_calls: ToolCalls
) -> None:
    user = make_user(runtime)
    marker = save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("droid", server.url, user.key, "--hooks")
    settings = json.loads((client_env.home / ".factory" / "settings.json").read_text())
    assert {"SessionStart", "Stop", "PreCompact", "SessionEnd"} <= set(settings["hooks"])
    use_model(client_env, model)
    done = client_env.run([droid(client_env), *EXEC, "hi"], user.key)
    context = f"{model.summary()}\n{done.stdout}\n{done.stderr}"
    assert tool_calls.calls("load_session", user.id), context  # the hook ran
    assert model.bodies() and json.dumps(marker)[1:-1] in model.bodies()[0], context
    # ~/.factory/mcp.json works: Droid listed our tools with the key (its first request may go
    # out before its MCP servers are ready, so the request itself is not asked to hold them).
    listed = [r for r in tool_calls.calls("tools/list", str(user.id)) if getattr(r, "status", None) == 200]
    assert listed, context


def test_a_run_leaves_a_session_file_the_reader_understands(server, runtime, client_env: Env) -> None:
    user = make_user(runtime)
    save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("droid", server.url, user.key, "--hooks")
    path = client_env.home / ".factory" / "settings.json"
    data = json.loads(path.read_text())
    payloads = client_env.home / "stop.jsonl"
    log = {"type": "command", "command": f"cat >> '{payloads}'; echo >> '{payloads}'", "timeout": 5}
    data["hooks"]["Stop"].append({"hooks": [log]})
    path.write_text(json.dumps(data))
    marker = f"sv-marker-{os.urandom(6).hex()}"
    (client_env.project / "notes").mkdir()
    with ScriptedChat(droid_script(marker, client_env.project)) as model:
        use_model(client_env, model)
        done = client_env.run([droid(client_env), *EXEC, PROMPT], user.key)
    assert done.returncode == 0 and marker in done.stdout, f"{model.summary()}\n{done.stdout}{done.stderr}"
    payload = json.loads(payloads.read_text().splitlines()[-1])
    found = capture.locate(client_env.home, client_env.project)
    assert found == Path(payload["transcript_path"]), payload
    assert capture.locate(client_env.home, Path("/elsewhere"), payload["session_id"]) == found
    read = capture.read(found)
    assert read.session_id == payload["session_id"] and read.cwd == str(client_env.project)
    assert list(read.asks) == [PROMPT] and list(read.files) == [PLAN_PATH]
    [failure] = read.failures
    assert failure.startswith("python3 -c") and failure.endswith(f": {FAILURE_LINE}"), failure
    assert marker in read.last_message
