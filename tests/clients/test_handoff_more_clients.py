"""Zero-call handoffs for the clients that came after the first four (test_handoff_without_tool_calls.py
says how one is proven): the source client runs the scripted session against a local endpoint of
its provider's API, its own end-of-work hooks save the checkpoint from its own transcript, and a
different real client, started in a clone whose remote is spelled the https way, gets it into
its first model request through its session-start hook. No model calls a SessionVault tool.

Pairs here: Gemini CLI -> GitHub Copilot CLI -> Factory Droid -> Cline CLI -> Kilo Code -> Claude
Code; Kilo Code -> OpenCode -> Claude Code.
Together with the first file's pairs every capture client is a source and a target at least once
(docs/clients.md has the matrix)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from sessionvault.core import records

from ..conftest import make_user
from ..support.model_recorder import ModelRecorder
from ..support.scripted_chat import ScriptedChat, cline_script, copilot_script, droid_script, kilo_script
from ..support.scripted_gemini import ScriptedGemini, checkpoint_script
from ..support.scripted_opencode import MODEL as OPENCODE_MODEL
from ..support.scripted_opencode import PROVIDER as OPENCODE_PROVIDER
from ..support.scripted_opencode import TODOS as OPENCODE_TODOS
from ..support.scripted_opencode import ScriptedOpenCode
from .conftest import Env, ToolCalls
from .test_claude_code import approve_project_servers, claude
from .test_cline_cli import run_cline
from .test_copilot_cli import FLAGS, copilot
from .test_copilot_cli import model_env as copilot_model
from .test_droid import EXEC, droid, use_model
from .test_gemini import NO_MODEL, gemini, trust_folder
from .test_handoff_without_tool_calls import (
    CHECK_STEP,
    CLAUDE_ENV,
    FAILURE,
    PLAN_PATH,
    PROMPT,
    SSH_REMOTE,
    checkpoints,
    make_clone,
    other_clone,
    sessionvault_tool_uses,
)
from .test_kilo_code import kilo_until, run_kilo
from .test_opencode import QUIET as OPENCODE_QUIET
from .test_opencode import opencode, opencode_config, opencode_until


def the_checkpoint(runtime: Any, user: Any, client: str, marker: str, step: str | None, out: str) -> None:
    """The one automatic checkpoint for the repo, saved by `client`'s hooks, with the file, the
    failing command and `marker`, and the plan step `step` in progress (None: a client whose
    headless mode offers the model no task list)."""
    [saved] = checkpoints(runtime, user)
    record = runtime.vault.load(user.principal, records.parse(records.LoadArgs, {"name": saved["name"]}))
    assert saved["name"].startswith(f"auto/{client}/") and record["client"] == client, out
    assert marker in record["summary"] and PLAN_PATH in record["files"] and FAILURE in record["errors"], (
        record
    )
    assert step is None or f"[doing] {step}" in record["plan"], record


def no_sessionvault_call(model: ModelRecorder, out: str) -> None:
    assert not sessionvault_tool_uses(model.bodies()), out


# --- the sources ---------------------------------------------------------------------------------


def run_gemini(env: Env, url: str, key: str, marker: str) -> str:
    """`connect gemini --hooks` (AfterAgent and SessionEnd save the checkpoint), the folder
    trusted, a model that is offered write_todos, then `gemini -p` against the scripted model."""
    env.connect("gemini", url, key, "--hooks")
    trust_folder(env)
    path = env.home / ".gemini" / "settings.json"
    data: dict[str, Any] = json.loads(path.read_text())
    data["security"] = {"auth": {"selectedType": "gemini-api-key"}}
    data["model"] = {"name": "gemini-2.5-pro"}
    path.write_text(json.dumps(data, indent=2))
    with ScriptedGemini(checkpoint_script(marker)) as model:
        argv = [gemini(env), "-p", PROMPT, "--approval-mode=yolo"]
        done = env.run(argv, key, GOOGLE_GEMINI_BASE_URL=model.base_url, **NO_MODEL)
    out = f"{done.stdout}\n{done.stderr}\n{model.summary()}"
    assert done.returncode == 0 and marker in done.stdout, out
    no_sessionvault_call(model, out)
    return out


def run_copilot(env: Env, url: str, key: str, marker: str) -> str:
    """`connect copilot-cli --hooks` (Stop and SessionEnd save the checkpoint), then `copilot -p`
    against the scripted Chat Completions model: its task list, a file, a failing command."""
    env.connect("copilot-cli", url, key, "--hooks")
    (env.project / "notes").mkdir()
    with ScriptedChat(copilot_script(marker, env.project)) as model:
        done = env.run([copilot(env), "-p", PROMPT, *FLAGS], key, **copilot_model(model))
    out = f"{done.stdout}\n{done.stderr}\n{model.summary()}"
    assert done.returncode == 0 and marker in done.stdout, out
    no_sessionvault_call(model, out)
    return out


def run_droid(env: Env, url: str, key: str, marker: str) -> str:
    """`connect droid --hooks` (Stop and SessionEnd save the checkpoint), then `droid exec`
    against the scripted model: a file and a failing command (no task list: see droid_script)."""
    env.connect("droid", url, key, "--hooks")
    (env.project / "notes").mkdir()
    with ScriptedChat(droid_script(marker, env.project)) as model:
        use_model(env, model)
        done = env.run([droid(env), *EXEC, PROMPT], key)
    out = f"{done.stdout}\n{done.stderr}\n{model.summary()}"
    assert done.returncode == 0 and marker in done.stdout, out
    no_sessionvault_call(model, out)
    return out


def run_cline_cli(env: Env, url: str, key: str, marker: str) -> str:
    """`connect cline-cli --hooks` (TaskComplete saves the checkpoint), then a one-shot `cline`
    run against the scripted model: a file and a failing command (no task list: see
    cline_script)."""
    env.connect("cline-cli", url, key, "--hooks")
    (env.project / "notes").mkdir()
    with ScriptedChat(cline_script(marker, env.project)) as model:
        done = run_cline(env, key, model, PROMPT)
    out = f"{done.stdout}\n{done.stderr}\n{model.summary()}"
    assert done.returncode == 0 and marker in done.stdout, out
    no_sessionvault_call(model, out)
    return out


def run_kilo_code(env: Env, url: str, key: str, marker: str) -> str:
    """`connect kilo-code --hooks` (its plugin saves the checkpoint on session.idle), then
    `kilo run` against the scripted model: its todo list, a file, a failing command."""
    env.connect("kilo-code", url, key, "--hooks")
    (env.project / "notes").mkdir()
    with ScriptedChat(kilo_script(marker, env.project)) as model:
        done = run_kilo(env, key, model, PROMPT)
    out = f"{done.stdout}\n{done.stderr}\n{model.summary()}"
    assert done.returncode == 0 and marker in done.stdout, out
    no_sessionvault_call(model, out)
    return out


def run_opencode(env: Env, url: str, key: str, marker: str) -> str:
    """`connect opencode --hooks` (its plugin, Kilo Code's, saves the checkpoint on
    session.idle), then `opencode run` against the scripted model: its todo list, a file, a
    failing command."""
    env.connect("opencode", url, key, "--hooks")
    with ScriptedOpenCode(env.project, marker) as model:
        opencode_config(env, model.base_url)
        argv = [opencode(env), "run", "-m", f"{OPENCODE_PROVIDER}/{OPENCODE_MODEL}", PROMPT]
        done = env.run(argv, key, timeout=180, **OPENCODE_QUIET)
    out = f"{done.stdout}\n{done.stderr}\n{model.summary()}"
    assert done.returncode == 0 and marker in done.stdout, out
    no_sessionvault_call(model, out)
    return out


# --- the targets ---------------------------------------------------------------------------------


def handed_over(model: ModelRecorder, source: str, marker: str) -> None:
    """The first model request holds the source's checkpoint (its name, auto/<source>/<id>, and
    the marker of its last reply), and the target's model called no SessionVault tool."""
    first = model.bodies()[:1]
    assert first and json.dumps(marker)[1:-1] in first[0] and f"auto/{source}/" in first[0], model.summary()
    assert not sessionvault_tool_uses(model.bodies()), model.summary()


def copilot_sees(env: Env, url: str, key: str, marker: str, source: str) -> None:
    env.connect("copilot-cli", url, key, "--hooks")
    with ModelRecorder() as model:
        env.run([copilot(env), "-p", "hi", *FLAGS], key, **copilot_model(model))
        handed_over(model, source, marker)


def droid_sees(env: Env, url: str, key: str, marker: str, source: str) -> None:
    env.connect("droid", url, key, "--hooks")
    with ModelRecorder() as model:
        use_model(env, model)
        env.run([droid(env), *EXEC, "hi"], key)
        handed_over(model, source, marker)


def cline_sees(env: Env, url: str, key: str, marker: str, source: str) -> None:
    env.connect("cline-cli", url, key, "--hooks")
    with ModelRecorder() as model:
        run_cline(env, key, model, "Say hello.")
        handed_over(model, source, marker)


def kilo_sees(env: Env, url: str, key: str, marker: str, source: str) -> None:
    env.connect("kilo-code", url, key, "--hooks")
    with ModelRecorder() as model:
        kilo_until(env, key, model, marker)
        handed_over(model, source, marker)


def opencode_sees(env: Env, url: str, key: str, marker: str, source: str) -> None:
    env.connect("opencode", url, key, "--hooks")
    with ModelRecorder() as model:
        opencode_until(env, key, model, marker)
        handed_over(model, source, marker)


def claude_code_sees(env: Env, url: str, key: str, marker: str, source: str) -> None:
    env.connect("claude-code", url, key, "--hooks")
    approve_project_servers(env)
    with ModelRecorder() as model:
        env.until(
            [claude(env), "-p", "hi"],
            key,
            lambda: model.saw(marker),
            timeout=90,
            ANTHROPIC_BASE_URL=model.base_url,
            **CLAUDE_ENV,
            CLAUDE_CODE_MAX_RETRIES="0",
            API_TIMEOUT_MS="3000",
        )
        handed_over(model, source, marker)


# --- the pairs -----------------------------------------------------------------------------------


# Each pair: the source's run, the id its checkpoints carry, the plan step its task list shows
# (None: its headless mode offers the model no task list), the clone the target starts in, and
# the target that must see it.
PAIRS = {
    "gemini-cli-to-copilot-cli": (run_gemini, "gemini", CHECK_STEP, "copilot", copilot_sees),
    "copilot-cli-to-droid": (run_copilot, "copilot-cli", CHECK_STEP, "droid", droid_sees),
    "droid-to-cline": (run_droid, "droid", None, "cline", cline_sees),
    "cline-to-kilo-code": (run_cline_cli, "cline-cli", None, "kilo", kilo_sees),
    "kilo-code-to-claude-code": (run_kilo_code, "kilo-code", CHECK_STEP, "claude", claude_code_sees),
    "kilo-code-to-opencode": (run_kilo_code, "kilo-code", CHECK_STEP, "opencode", opencode_sees),
    "opencode-to-claude-code": (
        run_opencode,
        "opencode",
        OPENCODE_TODOS[0]["content"],
        "claude",
        claude_code_sees,
    ),
}


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_a_client_hands_over_to_another_with_no_tool_call(
    pair: str, server, runtime, client_env: Env, tool_calls: ToolCalls, tmp_path: Path
) -> None:
    run, source, step, clone, sees = PAIRS[pair]
    user = make_user(runtime)
    make_clone(client_env.project, SSH_REMOTE)
    marker = f"zero-call-marker-{os.urandom(6).hex()}"
    out = run(client_env, server.url, user.key, marker)
    # A client may exit before its end-of-work hook has saved (OpenCode's plugin runs it from
    # the session.idle event, which `opencode run` does not wait for): polled, with a deadline.
    deadline = time.monotonic() + 30
    while not checkpoints(runtime, user) and time.monotonic() < deadline:
        time.sleep(0.2)
    the_checkpoint(runtime, user, source, marker, step, out)
    assert tool_calls.calls("checkpoint_session", user.id), out
    sees(other_clone(client_env, tmp_path, clone), server.url, user.key, marker, source)
