"""GitHub Copilot CLI (the real `copilot`, @github/copilot) against a real server, with no
GitHub account: `COPILOT_PROVIDER_BASE_URL` points it at an OpenAI-compatible endpoint of our
own (a recorder, or the scripted model in tests/support/scripted_chat.py) with a dummy key, and
`COPILOT_OFFLINE=true` keeps it off GitHub's services.

`connect copilot-cli --hooks` writes ~/.copilot/mcp-config.json and ~/.copilot/hooks/
sessionvault.json; a `copilot -p` run lists our tools, its SessionStart hook puts the saved
session into the first model request, and its end-of-work hooks (Stop, SessionEnd) save a
checkpoint that the reader builds from the session it wrote."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sessionvault.local.hook.capture import copilot_cli as capture

from ..conftest import make_user
from ..support.model_recorder import ModelRecorder
from ..support.scripted_chat import QWEN_TODOS, ScriptedChat, copilot_script
from ..support.scripted_gemini import FAILURE_LINE, PLAN_PATH
from .conftest import Env, ToolCalls, save_marked_session

PROMPT = "Plan the widget work, write notes/plan.md, then check the widget config."
FLAGS = ["--allow-all-tools", "--allow-all-paths"]


def copilot(env: Env) -> str:
    return str(env.bin / "copilot")


def model_env(model: ModelRecorder) -> dict[str, str]:
    """Copilot CLI's bring-your-own-model settings, pointed at `model`, and no GitHub traffic."""
    return {
        "COPILOT_PROVIDER_BASE_URL": model.base_url + "/v1",
        "COPILOT_PROVIDER_API_KEY": "dummy-not-a-key",
        "COPILOT_MODEL": "scripted",
        "COPILOT_OFFLINE": "true",
    }


def sessionvault_tools(model: ModelRecorder) -> list[str]:
    """The SessionVault tools offered in the first model request (Copilot CLI names an MCP tool
    `<server>-<tool>`)."""
    bodies = model.bodies()
    if not bodies:
        return []
    tools = json.loads(bodies[0]).get("tools") or []
    return [t["function"]["name"] for t in tools if "sessionvault" in t.get("function", {}).get("name", "")]


def test_the_session_start_hook_puts_the_saved_session_into_the_first_request(
    server, runtime, client_env: Env, model: ModelRecorder, tool_calls: ToolCalls
) -> None:
    user = make_user(runtime)
    marker = save_marked_session(server.url, user.key, client_env.project)
    out = client_env.connect("copilot-cli", server.url, user.key, "--hooks")
    hooks = json.loads((client_env.home / ".copilot" / "hooks" / "sessionvault.json").read_text())
    assert hooks["version"] == 1 and {"SessionStart", "Stop", "PreCompact", "SessionEnd"} <= set(
        hooks["hooks"]
    )
    assert "unverified" not in out, out
    done = client_env.run([copilot(client_env), "-p", "hi", *FLAGS], user.key, **model_env(model))
    context = f"{model.summary()}\n{done.stdout}\n{done.stderr}"
    assert tool_calls.calls("load_session", user.id), context  # the hook ran
    first = model.bodies()[0]
    assert marker in first or json.dumps(marker)[1:-1] in first, context
    assert {"sessionvault-save_session", "sessionvault-load_session"} <= set(sessionvault_tools(model)), (
        context
    )


def test_a_run_leaves_a_session_the_reader_understands(server, runtime, client_env: Env) -> None:
    user = make_user(runtime)
    save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("copilot-cli", server.url, user.key, "--hooks")
    payloads = client_env.home / "stop.jsonl"
    path = client_env.home / ".copilot" / "hooks" / "log.json"
    log = {"type": "command", "bash": f"cat >> '{payloads}'; echo >> '{payloads}'", "timeoutSec": 5}
    path.write_text(json.dumps({"version": 1, "hooks": {"Stop": [log]}}))
    marker = f"sv-marker-{os.urandom(6).hex()}"
    (client_env.project / "notes").mkdir()
    with ScriptedChat(copilot_script(marker, client_env.project)) as model:
        done = client_env.run([copilot(client_env), "-p", PROMPT, *FLAGS], user.key, **model_env(model))
    assert done.returncode == 0 and marker in done.stdout, f"{model.summary()}\n{done.stdout}{done.stderr}"
    payload = json.loads(payloads.read_text().splitlines()[-1])
    found = capture.locate(client_env.home, client_env.project)
    assert found == Path(payload["transcript_path"]), payload
    assert capture.locate(client_env.home, Path("/elsewhere"), payload["session_id"]) == found
    read = capture.read(found)
    assert read.session_id == payload["session_id"] and read.cwd == str(client_env.project)
    assert list(read.asks) == [PROMPT]
    assert read.todos == {t["content"]: t["status"] for t in QWEN_TODOS}
    assert list(read.files) == [PLAN_PATH]
    [failure] = read.failures
    assert failure.startswith("python3 -c") and failure.endswith(f": {FAILURE_LINE}"), failure
    assert marker in read.last_message
