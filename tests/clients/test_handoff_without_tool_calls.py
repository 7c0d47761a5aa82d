"""A handoff with zero tool calls, between real CLIs and no model: the source client runs a
scripted session (a task, a written file, a failing command, a final message) against a local
endpoint that speaks its provider's API; its own end-of-work hooks (installed by `connect
--hooks`) turn its own transcript into a checkpoint on the real server. Then a second real
client, started in another clone of the same repo whose remote is spelled another way, gets
that checkpoint into its first model request through its session-start hook. No model calls
save_session or load_session: the scripted ones never name a SessionVault tool."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from sessionvault.core import records

from ..conftest import make_user
from ..support.model_recorder import ModelRecorder
from ..support.scripted_anthropic import ScriptedAnthropic, checkpoint_script
from .conftest import Env, ToolCalls
from .test_gemini import NO_MODEL, gemini, trust_folder

TASK = "Write the widget plan"
COMMAND = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\""
FAILURE = f"{COMMAND}: sv-boom: widget config missing"
SSH_REMOTE = "git@github.com:Acme/Widget.git"
HTTPS_REMOTE = "https://github.com/acme/widget"
REPO = "github.com/acme/widget"


def git(path: Path, *args: str) -> None:
    who = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "-C", str(path), *who, *args], check=True, capture_output=True, timeout=30)


def make_clone(path: Path, remote: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, timeout=30)
    git(path, "remote", "add", "origin", remote)
    (path / "README.md").write_text("widget\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return path


def checkpoints(runtime: Any, user: Any) -> list[dict[str, Any]]:
    listed = runtime.vault.list(user.principal, records.parse(records.ListArgs, {"repo": REPO}))
    return [e for e in listed["sessions"] if e.get("automatic")]


def run_claude_code(env: Env, key: str, marker: str) -> str:
    """`claude -p` in the project, its model scripted; returns what it printed."""
    model = ScriptedAnthropic(checkpoint_script(marker, task=TASK, command=COMMAND))
    with model:
        done = env.run(
            [str(env.bin / "claude"), "-p", "Plan the widget.", "--permission-mode", "bypassPermissions"],
            key,
            ANTHROPIC_BASE_URL=model.base_url,
            ANTHROPIC_API_KEY="sk-ant-dummy-not-a-key",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            IS_SANDBOX="1",  # bypassPermissions is refused to root without it (test containers)
            CLAUDE_CODE_ENABLE_TODO_TOOLS="1",  # the default model of 2.1.332 gets no task tool
        )
    out = f"{done.stdout}\n{done.stderr}\n{model.summary()}"
    assert done.returncode == 0 and marker in done.stdout, out
    assert not sessionvault_tool_uses(model.bodies()), out
    return out


def sessionvault_tool_uses(bodies: list[str]) -> list[str]:
    """The names of SessionVault tools the model called, as Claude Code sends its history back."""
    called = []
    for body in bodies:
        try:
            messages = json.loads(body).get("messages", [])
        except ValueError:
            continue
        for message in messages:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_use" and "sessionvault" in str(block.get("name")):
                    called.append(str(block["name"]))
    return called


def test_claude_code_hands_over_to_gemini_cli_with_no_tool_call(
    server, runtime, client_env: Env, tool_calls: ToolCalls, tmp_path: Path
) -> None:
    user = make_user(runtime)
    make_clone(client_env.project, SSH_REMOTE)
    client_env.connect("claude-code", server.url, user.key, "--hooks")
    settings = json.loads((client_env.home / ".claude" / "settings.json").read_text())
    assert {"Stop", "PreCompact", "SessionEnd"} <= set(settings["hooks"]), settings
    marker = f"zero-call-marker-{os.urandom(6).hex()}"
    out = run_claude_code(client_env, user.key, marker)

    [saved] = checkpoints(runtime, user)
    record = runtime.vault.load(user.principal, records.parse(records.LoadArgs, {"name": saved["name"]}))
    assert saved["name"].startswith("auto/claude-code/") and record["client"] == "claude-code", out
    assert marker in record["summary"] and f"[doing] {TASK}" in record["plan"], record
    assert "notes/plan.md" in record["files"] and FAILURE in record["errors"], record
    # Every save came from a hook: the model's requests never held a SessionVault tool call.
    assert tool_calls.calls("save_session", user.id), out

    # The next client: Gemini CLI, in another clone whose remote is spelled the https way.
    other = Env(
        home=tmp_path / "gemini-home",
        project=make_clone(tmp_path / "other", HTTPS_REMOTE),
        bin=client_env.bin,
    )
    other.home.mkdir()
    other.connect("gemini", server.url, user.key, "--hooks")
    trust_folder(other)
    gemini_settings = other.home / ".gemini" / "settings.json"
    data = json.loads(gemini_settings.read_text())
    data["security"] = {"auth": {"selectedType": "gemini-api-key"}}
    gemini_settings.write_text(json.dumps(data, indent=2))
    with ModelRecorder() as model:
        seen, _ = other.until(
            [gemini(other), "-p", "hi"],
            user.key,
            lambda: model.saw(marker),
            timeout=90,
            GOOGLE_GEMINI_BASE_URL=model.base_url,
            **NO_MODEL,
        )
        assert seen, f"{model.summary()}\n{other.last_output}"
        assert model.saw("automatic checkpoint for `github.com/acme/widget` (from `claude-code`")
