"""Gemini CLI (the real `gemini`) writes a session file our reader understands: a headless run
against the scripted model (tests/support/scripted_gemini.py) calls write_todos, write_file and
a failing shell command, with SessionVault's own session-start hook installed (its context is
recorded in front of the prompt); `locate` finds
the file an AfterAgent hook names, and `read` finds the todos, the file, the failure line and
the final answer in it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sessionvault.local.hook.capture import gemini as capture

from ..conftest import make_user
from ..support.scripted_gemini import FAILURE_LINE, PLAN_PATH, TODOS, ScriptedGemini, checkpoint_script
from .conftest import Env, save_marked_session
from .test_gemini import NO_MODEL, gemini, trust_folder

PROMPT = "Plan the widget work, write notes/plan.md, then check the widget config."


def with_capture_settings(env: Env, payloads: Path) -> None:
    """Headless auth, a model that is offered write_todos (Gemini 2.x, not the 3.x default),
    and an AfterAgent hook that appends its payload to `payloads`."""
    path = env.home / ".gemini" / "settings.json"
    data: dict[str, Any] = json.loads(path.read_text())
    data["security"] = {"auth": {"selectedType": "gemini-api-key"}}
    data["model"] = {"name": "gemini-2.5-pro"}
    log = {"type": "command", "command": f"cat >> '{payloads}'; echo >> '{payloads}'", "timeout": 5000}
    data["hooks"]["AfterAgent"] = [{"hooks": [log]}]
    path.write_text(json.dumps(data, indent=2))


def test_a_headless_run_leaves_a_session_file_the_reader_understands(
    server, runtime, client_env: Env
) -> None:
    user = make_user(runtime)
    handoff = save_marked_session(server.url, user.key, client_env.project)
    client_env.connect("gemini", server.url, user.key, "--hooks")
    trust_folder(client_env)
    payloads = client_env.home / "after-agent.jsonl"
    with_capture_settings(client_env, payloads)
    marker = f"sv-marker-{os.urandom(6).hex()}"
    with ScriptedGemini(checkpoint_script(marker)) as model:
        argv = [gemini(client_env), "-p", PROMPT, "--approval-mode=yolo"]
        done = client_env.run(argv, user.key, GOOGLE_GEMINI_BASE_URL=model.base_url, **NO_MODEL)
    assert done.returncode == 0 and marker in done.stdout, f"{model.summary()}\n{done.stdout}{done.stderr}"
    payload = json.loads(payloads.read_text().splitlines()[-1])
    path = capture.locate(client_env.home, client_env.project)
    assert path == Path(payload["transcript_path"]), payload
    assert capture.locate(client_env.home, Path("/elsewhere"), payload["session_id"]) == path
    read = capture.read(path)
    assert read.session_id == payload["session_id"] and read.cwd == str(client_env.project)
    assert handoff in path.read_text() and list(read.asks) == [PROMPT]  # the hook's text is not asked
    assert read.todos == {t["description"]: t["status"] for t in TODOS}
    assert list(read.files) == [PLAN_PATH]
    [failure] = read.failures
    assert failure.startswith("python3 -c") and failure.endswith(f": {FAILURE_LINE}"), failure
    assert marker in read.last_message
