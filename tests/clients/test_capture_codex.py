"""Codex CLI (the real `codex exec`) writes a session file our reader understands: a headless run
against the scripted model (tests/support/scripted_openai.py) calls update_plan, apply_patch
and a failing shell command, with SessionVault's own session-start hook installed and trusted
(its context is recorded as a developer message, not an ask); `locate` finds the file a Stop
hook names, and `read` finds the plan, the file, the failure line and the final answer in it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sessionvault.local.hook.capture import codex as capture
from sessionvault.local.hook.capture import codex_sessions

from ..conftest import make_user
from ..support.scripted_openai import (
    FAILING_COMMAND,
    FAILURE_LINE,
    PLAN,
    PLAN_PATH,
    ScriptedOpenAI,
    checkpoint_script,
    codex_config,
)
from .conftest import Env, save_marked_session
from .test_codex import app_server, codex

PROMPT = "Plan the widget work, write notes/plan.md, then check the widget config."
# Tools run without asking and without a sandbox (Codex's own may not work in a container).
EXEC_FLAGS = ["--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]


def trust_all_hooks(env: Env, key: str | None) -> list[dict[str, Any]]:
    """What trusting every hook in Codex's `/hooks` does (see test_codex.trust_our_hooks):
    untrusted hooks are skipped silently. Returns the hooks as Codex lists them."""
    [listed] = app_server(env, key, "hooks/list", {"cwds": [str(env.project)]})["data"]
    state = {h["key"]: {"trusted_hash": h["currentHash"]} for h in listed["hooks"]}
    write = {"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}
    app_server(env, key, "config/value/write", write)
    return list(listed["hooks"])


def with_stop_hook(env: Env, payloads: Path) -> None:
    """A Stop hook beside the session-start hook `connect --hooks` wrote: it appends its
    payload to `payloads`."""
    path = env.home / ".codex" / "hooks.json"
    data: dict[str, Any] = json.loads(path.read_text())
    log = {"type": "command", "command": f"cat >> '{payloads}'; echo >> '{payloads}'", "timeout": 10}
    data["hooks"]["Stop"] = [{"hooks": [log]}]
    path.write_text(json.dumps(data, indent=2))


def test_a_headless_run_leaves_a_session_file_the_reader_understands(
    server, runtime, client_env: Env
) -> None:
    user = make_user(runtime)
    handoff = save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("codex", server.url, user.key, "--hooks")
    payloads = client_env.home / "stop.jsonl"
    with_stop_hook(client_env, payloads)
    marker = f"sv-marker-{os.urandom(6).hex()}"
    with ScriptedOpenAI(checkpoint_script(marker)) as model:
        config = client_env.home / ".codex" / "config.toml"
        config.write_text(codex_config(model, existing=config.read_text()))
        events = {h["eventName"] for h in trust_all_hooks(client_env, user.key)}
        # connect --hooks: the session-start hook and the checkpoint hook's three events (plus
        # this test's own Stop hook, under the same event name)
        assert events == {"sessionStart", "stop", "preCompact", "sessionEnd"}, events
        done = client_env.run([codex(client_env), "exec", *EXEC_FLAGS, PROMPT], user.key, timeout=180)
    assert done.returncode == 0 and marker in done.stdout, f"{model.summary()}\n{done.stdout}{done.stderr}"
    assert not model.errors, model.errors
    [payload] = [json.loads(line) for line in payloads.read_text().splitlines() if line.strip()]
    path = codex_sessions.locate(client_env.home, client_env.project)  # finding moved there (e8f727b)
    assert path == Path(payload["transcript_path"]), payload
    assert codex_sessions.locate(client_env.home, Path("/elsewhere"), payload["session_id"]) == path
    read = capture.read(path)
    assert read.session_id == payload["session_id"] and read.cwd == str(client_env.project)
    assert handoff in path.read_text() and list(read.asks) == [PROMPT]  # the hook's text is not asked
    assert read.todos == dict(PLAN)
    assert list(read.files) == [PLAN_PATH] and (client_env.project / PLAN_PATH).is_file()
    assert list(read.failures) == [f"{FAILING_COMMAND}: {FAILURE_LINE}"]
    assert marker in read.last_message and marker in payload["last_assistant_message"]
