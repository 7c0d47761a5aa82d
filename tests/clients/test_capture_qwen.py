"""Qwen Code (the real `qwen`) writes a session file our reader understands: a one-shot run
against the scripted OpenAI-compatible model (tests/support/scripted_chat.py) calls todo_write,
write_file and a failing shell command, with SessionVault's own session-start hook installed;
`locate` finds the file a Stop hook names, and `read` finds the todos, the file, the failure
line and the final answer in it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sessionvault.local.hook.capture import qwen as capture

from ..conftest import make_user
from ..support.scripted_chat import QWEN_TODOS, ScriptedChat, checkpoint_script
from ..support.scripted_gemini import FAILURE_LINE, PLAN_PATH
from .conftest import Env, save_marked_session
from .test_qwen import NO_MODEL, connect_qwen, qwen

PROMPT = "Plan the widget work, write notes/plan.md, then check the widget config."


def with_capture_settings(env: Env, payloads: Path) -> None:
    """OpenAI auth, the todo tool (off by default), and a Stop hook (Qwen Code has no SessionEnd
    in a one-shot run) that appends its payload to `payloads`."""
    path = env.home / ".qwen" / "settings.json"
    data: dict[str, Any] = json.loads(path.read_text())
    data["security"] = {"auth": {"selectedType": "openai"}}
    data["tools"] = {"todoWrite": {"enabled": True}}
    log = {"type": "command", "command": f"cat >> '{payloads}'; echo >> '{payloads}'", "timeout": 5}
    data["hooks"]["Stop"] = [{"hooks": [log]}]
    path.write_text(json.dumps(data, indent=2))


def test_a_one_shot_run_leaves_a_session_file_the_reader_understands(
    server, runtime, client_env: Env
) -> None:
    user = make_user(runtime)
    save_marked_session(server.url, user.key, client_env.project)
    connect_qwen(client_env, server.url, user.key, "--hooks")
    payloads = client_env.home / "stop.jsonl"
    with_capture_settings(client_env, payloads)
    marker = f"sv-marker-{os.urandom(6).hex()}"
    with ScriptedChat(checkpoint_script(marker, client_env.project)) as model:
        argv = [qwen(client_env), PROMPT, "--approval-mode=yolo"]
        done = client_env.run(
            argv,
            user.key,
            OPENAI_API_KEY="dummy-not-a-key",
            OPENAI_BASE_URL=model.base_url + "/v1",
            OPENAI_MODEL="qwen3-coder-plus",
            **NO_MODEL,
        )
    assert done.returncode == 0 and marker in done.stdout, f"{model.summary()}\n{done.stdout}{done.stderr}"
    payload = json.loads(payloads.read_text().splitlines()[-1])
    path = capture.locate(client_env.home, client_env.project)
    assert path == Path(payload["transcript_path"]), payload
    assert capture.locate(client_env.home, Path("/elsewhere"), payload["session_id"]) == path
    read = capture.read(path)
    assert read.session_id == payload["session_id"] and read.cwd == str(client_env.project)
    assert list(read.asks) == [PROMPT]
    assert read.todos == {t["content"]: t["status"] for t in QWEN_TODOS}
    assert list(read.files) == [PLAN_PATH]
    [failure] = read.failures
    assert failure.startswith("python3 -c") and failure.endswith(f": {FAILURE_LINE}"), failure
    assert marker in read.last_message
