"""Kilo Code's CLI (the real `kilo`, npm's @kilocode/cli-linux-x64: the @kilocode/cli wrapper has
no 7.7.9 on npm, its platform package has) against a real server, with no Kilo account: a
provider in ~/.config/kilo/kilo.json (the bundled @ai-sdk/openai-compatible package) points
`kilo run --auto -m scripted/m` at an OpenAI-compatible endpoint of our own with a dummy key.

Kilo Code has no command hooks: `connect kilo-code --hooks` writes a plugin
(~/.config/kilo/plugins/sessionvault.js) that puts the saved session into the system prompt of
the first model request and saves a checkpoint from Kilo's own store when a session goes idle;
and the MCP entry into ~/.config/kilo/kilo.jsonc."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from sessionvault.local.hook.capture import kilo_code as capture

from ..conftest import make_user
from ..support.model_recorder import ModelRecorder
from ..support.scripted_chat import QWEN_TODOS, ScriptedChat, kilo_config, kilo_script
from ..support.scripted_gemini import FAILURE_LINE, PLAN_PATH
from .conftest import Env, ToolCalls, save_marked_session

PROMPT = "Plan the widget work, write notes/plan.md, then check the widget config."
QUIET = {
    "KILO_DISABLE_AUTOUPDATE": "1",
    "KILO_DISABLE_MODELS_FETCH": "1",
    "KILO_DISABLE_LSP_DOWNLOAD": "1",
    "KILO_DISABLE_SHARE": "1",
}


def kilo(env: Env) -> str:
    """The platform package's binary: it has no entry in node_modules/.bin."""
    return str(env.bin.parent / "@kilocode" / "cli-linux-x64" / "bin" / "kilo")


def kilo_run(env: Env, model: ModelRecorder, prompt: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of `kilo run` of `prompt`, its provider `model`."""
    config = env.home / ".config" / "kilo" / "kilo.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps(kilo_config(model), indent=2))
    more = {"XDG_DATA_HOME": str(env.home / ".local" / "share"), **QUIET}
    return [kilo(env), "run", "--auto", "-m", "scripted/m", prompt], more


def run_kilo(env: Env, key: str, model: ModelRecorder, prompt: str) -> subprocess.CompletedProcess[str]:
    """`kilo run` of `prompt` in the project, to its end."""
    argv, more = kilo_run(env, model, prompt)
    return env.run(argv, key, timeout=240, **more)


def kilo_until(env: Env, key: str, model: ModelRecorder, text: str) -> bool:
    """`kilo run` against a recorder until `text` reached it (Kilo retries a refused request
    for minutes: the run is stopped once the first request is in)."""
    argv, more = kilo_run(env, model, "Say hello.")
    seen, _ = env.until(argv, key, lambda: model.saw(text), timeout=120, **more)
    return seen


def test_the_plugin_puts_the_saved_session_into_the_first_request(
    server, runtime, client_env: Env, model: ModelRecorder, tool_calls: ToolCalls
) -> None:
    user = make_user(runtime)
    marker = save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("kilo-code", server.url, user.key, "--hooks")
    assert (client_env.home / ".config" / "kilo" / "plugins" / "sessionvault.js").is_file()
    kilo_until(client_env, user.key, model, marker)
    context = f"{model.summary()}\n{client_env.last_output}"
    assert tool_calls.calls("load_session", user.id), context  # the plugin ran the hook
    assert model.bodies() and json.dumps(marker)[1:-1] in model.bodies()[0], context
    listed = [r for r in tool_calls.calls("tools/list", str(user.id)) if getattr(r, "status", None) == 200]
    assert listed, context  # kilo.jsonc's MCP entry connects Kilo Code with the key


def test_a_run_leaves_a_session_the_reader_understands(server, runtime, client_env: Env) -> None:
    user = make_user(runtime)
    save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("kilo-code", server.url, user.key, "--hooks")
    marker = f"sv-marker-{os.urandom(6).hex()}"
    (client_env.project / "notes").mkdir()
    with ScriptedChat(kilo_script(marker, client_env.project)) as model:
        done = run_kilo(client_env, user.key, model, PROMPT)
    assert done.returncode == 0 and marker in done.stdout, f"{model.summary()}\n{done.stdout}{done.stderr}"
    found = capture.locate(client_env.home, client_env.project, env={})
    assert (
        found is not None and capture.locate(client_env.home, Path("/x"), found.session_id, env={}) == found
    )
    read = capture.read(found)
    assert read.cwd == str(client_env.project) and list(read.asks) == [PROMPT]
    assert read.todos == {t["content"]: t["status"] for t in QWEN_TODOS}
    assert list(read.files) == [PLAN_PATH]
    [failure] = read.failures
    assert failure.startswith("python3 -c") and failure.endswith(f": {FAILURE_LINE}"), failure
    assert marker in read.last_message
