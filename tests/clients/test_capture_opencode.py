"""The OpenCode reader on what the real `opencode run` (1.18.33) stores now, not on a fixture:
OpenCode's model is the scripted endpoint of tests/support/scripted_opencode.py (a custom
`@ai-sdk/openai-compatible` provider in ~/.config/opencode/opencode.json), which has it write its
todo list, create notes/plan.md, run a failing command and end with a unique marker. The reader
then finds that session in OpenCode's store under the throw-away HOME and reads it back."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sessionvault.local.hook.capture import opencode as reader

from ..support.scripted_opencode import (
    ERROR_LINE,
    FAILING_COMMAND,
    MODEL,
    PLAN_FILE,
    PROVIDER,
    TODOS,
    ScriptedOpenCode,
    provider_config,
)
from .conftest import Env
from .test_opencode import QUIET, opencode

PROMPT = "Plan the widget config work: track it, write notes/plan.md, check the config loads."
RUN_TIMEOUT_S = 180.0


def run_scripted_session(env: Env, *extra: str) -> tuple[str, str]:
    """One headless `opencode run` against the scripted model: (its output, the marker)."""
    marker = f"sv-marker-{os.urandom(6).hex()}"
    with ScriptedOpenCode(env.project, marker) as model:
        config = env.home / ".config" / "opencode"
        config.mkdir(parents=True, exist_ok=True)
        settings = {"$schema": "https://opencode.ai/config.json", "provider": provider_config(model.base_url)}
        (config / "opencode.json").write_text(json.dumps(settings, indent=2))
        done = env.run(
            [opencode(env), "run", *extra, "-m", f"{PROVIDER}/{MODEL}", PROMPT],
            None,
            timeout=RUN_TIMEOUT_S,
            **QUIET,
        )
        out = done.stdout + done.stderr
        assert done.returncode == 0 and marker in done.stdout, f"{out}\nmodel saw: {model.summary()}"
        assert model.saw("todowrite"), model.summary()  # OpenCode offered its todo tool
    return out, marker


def test_the_reader_finds_the_todos_file_failure_and_marker_of_a_real_opencode_run(client_env: Env) -> None:
    out, marker = run_scripted_session(client_env)
    stored = reader.locate(client_env.home, client_env.project, env=client_env.env(None, **QUIET))
    assert stored is not None, f"no OpenCode session of {client_env.project} under {client_env.home}: {out}"
    assert stored.db == client_env.home / ".local" / "share" / "opencode" / "opencode.db"
    transcript = reader.read(*stored)
    assert transcript.todos == {todo["content"]: todo["status"] for todo in TODOS}
    assert list(transcript.files) == [PLAN_FILE]
    assert (client_env.project / PLAN_FILE).is_file()  # the write really happened
    assert list(transcript.failures) == [f"{FAILING_COMMAND}: {ERROR_LINE}"]
    assert marker in transcript.last_message
    assert transcript.cwd == str(client_env.project) and transcript.session_id.startswith("ses_")
    assert any("widget config" in ask for ask in transcript.asks), list(transcript.asks)


def test_locate_finds_the_session_id_that_opencode_run_reports(client_env: Env) -> None:
    out, marker = run_scripted_session(client_env, "--format", "json")
    ids = {json.loads(line).get("sessionID") for line in out.splitlines() if line.startswith("{")}
    ids.discard(None)
    assert len(ids) == 1, out
    (session_id,) = ids
    env = client_env.env(None, **QUIET)
    newest = reader.locate(client_env.home, client_env.project, env=env)
    by_id = reader.locate(client_env.home, Path("/elsewhere"), session_id, env=env)
    assert newest is not None and newest.session_id == session_id and by_id == newest
    assert marker in reader.read(*newest).last_message
