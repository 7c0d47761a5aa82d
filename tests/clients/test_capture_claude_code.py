"""The automatic checkpoint's transcript reader against what the real Claude Code writes now:
`claude -p` runs a scripted session (a task, a written file, a failing command, a final
message; tests/support/scripted_anthropic.py) in the project, and the reader finds each of them
in the transcript `locate` finds, the very file the Stop hook is told about."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sessionvault.local.hook.capture import claude_code

from ..support.scripted_anthropic import ScriptedAnthropic, checkpoint_script
from .conftest import Env

TASK = "Write the widget plan"
COMMAND = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\""


def install_stop_hook(env: Env) -> Path:
    """A Stop hook that keeps its input: where Claude Code says the transcript is."""
    out = env.home / "stop-hook.json"
    settings = env.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    entry = {"hooks": [{"type": "command", "command": f"cat > {out}"}]}
    settings.write_text(json.dumps({"hooks": {"Stop": [entry]}}))
    return out


@pytest.mark.parametrize(
    "task_tools",
    [
        pytest.param({}, id="TaskCreate"),
        pytest.param({"CLAUDE_CODE_ENABLE_TASKS": "0"}, id="TodoWrite"),
    ],
)
def test_the_reader_finds_the_task_file_failure_and_last_message_claude_code_wrote(
    client_env: Env, task_tools: dict[str, str]
) -> None:
    marker = f"capture-marker-{os.urandom(6).hex()}"
    stop_hook = install_stop_hook(client_env)
    client_env.extra.update(task_tools)
    model = ScriptedAnthropic(checkpoint_script(marker, task=TASK, command=COMMAND))
    with model:
        done = client_env.run(
            [
                str(client_env.bin / "claude"),
                "-p",
                "Plan the widget.",
                "--permission-mode",
                "bypassPermissions",
            ],
            None,
            ANTHROPIC_BASE_URL=model.base_url,
            ANTHROPIC_API_KEY="sk-ant-dummy-not-a-key",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            IS_SANDBOX="1",  # bypassPermissions is refused to root without it (test containers)
            CLAUDE_CODE_ENABLE_TODO_TOOLS="1",  # the default model of 2.1.332 gets no task tool
        )
    context = f"{done.stdout}\n{done.stderr}\n{model.summary()}\nsteps: {model.steps}"
    assert done.returncode == 0 and marker in done.stdout, context
    found = claude_code.locate(client_env.home, client_env.project)
    assert found is not None, context
    told = json.loads(stop_hook.read_text())
    assert (
        Path(told["transcript_path"])
        == found
        == claude_code.locate(client_env.home, Path(told["cwd"]), told["session_id"])
    )
    read = claude_code.read(found)
    assert read.todos == {TASK: "in_progress"}, read
    assert list(read.files) == ["notes/plan.md"], read
    assert list(read.failures) == [f"{COMMAND}: sv-boom: widget config missing"], read
    assert marker in read.last_message and read.asks[-1] == "Plan the widget.", read
    assert read.session_id == told["session_id"] and read.cwd == str(client_env.project), read
