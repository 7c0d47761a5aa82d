"""A handoff from one person to another, with two people's real CLIs and scripted models
(docs/teams.md): Alice's Claude Code offers the incident to Bob in their workspace (its model
calls save_session with `workspace` and `to_person`, the repo spelled as Alice's remote is);
Bob's Codex, started in his own clone whose remote is spelled the https way, gets the offer into
its first model request through its session-start hook, labelled with the workspace and who
offered it, and its model claims it. Carol, who is not a member, starts Codex in her clone and
her model is told nothing of it (nor can she name the workspace). Then `sessionvault workspace
remove` takes Bob out, and his next call into the workspace, from the same Codex, is refused.

The workspace is made and changed with the `sessionvault workspace` command, as an operator
runs it, against the test run's database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sessionvault.core import records
from sessionvault.local.remote import rpc

from ..conftest import MASTER_KEY, User, admin_db, make_settings, make_user
from ..support import scripted_openai
from ..support.model_recorder import ModelRecorder
from ..support.scripted_anthropic import Say, ScriptedAnthropic, ToolCall
from .conftest import Env, ToolCalls
from .test_capture_codex import EXEC_FLAGS, trust_all_hooks
from .test_claude_code import approve_project_servers, claude
from .test_codex import codex, use_recorder_as_model
from .test_handoff_without_tool_calls import CLAUDE_ENV, HTTPS_REMOTE, REPO, SSH_REMOTE, make_clone

NAMESPACE = "mcp__sessionvault"  # how Claude Code and Codex name our tools
PROMPT = "sv-teams: pick up what the on-call engineer left"


@dataclass
class Person:
    user: User
    name: str
    env: Env


def person(runtime: Any, tmp_path: Path, who: str, bin_dir: Path, remote: str) -> Person:
    """A user of the vault with a key, and their own HOME and clone of the repo."""
    user = make_user(runtime, label=f"{who}-laptop")
    with admin_db().identity() as conn:
        name = str(conn.execute("SELECT name FROM users WHERE id = %s", (user.id,)).fetchone()["name"])
    home = tmp_path / f"{who}-home"
    home.mkdir()
    clone = make_clone(tmp_path / f"{who}-clone", remote)
    return Person(user, name, Env(home=home, project=clone, bin=bin_dir))


@pytest.fixture
def operator(pg: Any, tmp_path: Path) -> Iterator[Any]:
    """`sessionvault <argv>` as the operator runs it on the test run's database (its admin role)."""
    settings = make_settings(pg)
    env = {
        **os.environ,
        "HOME": str(tmp_path / "operator-home"),
        "DATABASE_URL": pg.app_url,
        "DATABASE_ADMIN_URL": pg.admin_url,
        "SESSIONVAULT_MASTER_KEY": MASTER_KEY,
        "SESSIONVAULT_AUDIT_SALT": settings.audit_salt,
        "SESSIONVAULT_EMBEDDINGS": "none",
    }

    def run(*argv: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "sessionvault.cli.main", *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"sessionvault {' '.join(argv)}: {done.stdout}{done.stderr}"
        return done.stdout

    yield run


# --- Codex calls our tools inside its namespace -------------------------------------------------


class NamespacedOpenAI(scripted_openai.ScriptedOpenAI):
    """The scripted Responses endpoint, where a call to `mcp__sessionvault__<tool>` goes out as
    Codex 0.171.0 offers MCP tools: a function call named `<tool>` in the namespace
    `mcp__sessionvault` (its first request lists them under a `namespace` tool)."""

    def _responses_turn(self, body: dict[str, Any]) -> Iterable[dict[str, Any]]:
        return [_namespaced(event) for event in super()._responses_turn(body)]


def _namespaced(value: Any) -> Any:
    if isinstance(value, list):
        return [_namespaced(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _namespaced(v) for k, v in value.items()}
    name = str(out.get("name", ""))
    if out.get("type") == "function_call" and name.startswith(f"{NAMESPACE}__"):
        out.update(namespace=NAMESPACE, name=name.removeprefix(f"{NAMESPACE}__"))
    return out


def codex_tool(tool: str, arguments: dict[str, Any]) -> scripted_openai.ToolStep:
    return scripted_openai.call(f"{NAMESPACE}__{tool}", arguments)


def tool_outputs(model: ModelRecorder) -> list[str]:
    """What Codex sent back to its model as the output of our scripted calls, in order."""
    seen: dict[str, str] = {}
    for body in model.bodies():
        try:
            items = json.loads(body).get("input") or []
        except (ValueError, AttributeError):
            continue
        for item in items:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                call_id = str(item.get("call_id", ""))
                if call_id.startswith(scripted_openai.CALL_PREFIX):
                    seen[call_id] = str(item.get("output"))
    return [seen[k] for k in sorted(seen)]


def answer_of(output: str) -> dict[str, Any]:
    """The tool's structured answer in a Codex call output ("Wall time: ...\nOutput:\n{...}")."""
    answer: dict[str, Any] = json.loads(output[output.index("{") :])
    return answer


def tool_result_text(model: ModelRecorder) -> str:
    """The text of the last tool result Claude Code sent its model (Anthropic `tool_result`)."""
    found = ""
    for body in model.bodies():
        for message in json.loads(body).get("messages") or []:
            for block in message.get("content") if isinstance(message.get("content"), list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    content = block.get("content")
                    parts = content if isinstance(content, list) else [{"text": content}]
                    found = "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
    return found


def first_scripted_request(model: ModelRecorder) -> str:
    """The first request of the scripted turn: what the session-start hook gave the model."""
    return next(r.body for r in model.requests if PROMPT in r.body and '"tools"' in r.body)


def run_codex(p: Person, url: str, model: scripted_openai.ScriptedOpenAI, *, connect: bool) -> str:
    """`codex exec` for `p` in their clone, its model `model`; on the first run `connect codex
    --hooks` and trust every hook (Codex skips untrusted ones silently), on later runs point the
    provider Codex already has at the new `model`. Returns what it printed."""
    config = p.env.home / ".codex" / "config.toml"
    if connect:
        p.env.connect("codex", url, p.user.key, "--hooks")
        config.write_text(scripted_openai.codex_config(model, existing=config.read_text()))
        trust_all_hooks(p.env, p.user.key)
    else:
        text = config.read_text()
        start = text.index('base_url = "', text.index("[model_providers.scripted]")) + len('base_url = "')
        config.write_text(text[:start] + f"{model.base_url}/v1" + text[text.index('"', start) :])
    done = p.env.run([codex(p.env), "exec", *EXEC_FLAGS, PROMPT], p.user.key, timeout=180)
    out = f"{done.stdout}\n{done.stderr}\n{model.summary()}"
    assert done.returncode == 0 and not model.errors, f"{model.errors}\n{out}"
    return out


# --- the story ----------------------------------------------------------------------------------


def test_alice_hands_an_incident_to_bob_in_their_workspace_and_carol_sees_nothing(
    server, runtime, client_env: Env, tool_calls: ToolCalls, operator, tmp_path: Path
) -> None:
    alice = person(runtime, tmp_path, "alice", client_env.bin, SSH_REMOTE)
    bob = person(runtime, tmp_path, "bob", client_env.bin, HTTPS_REMOTE)
    carol = person(runtime, tmp_path, "carol", client_env.bin, HTTPS_REMOTE)
    ws = f"oncall-{os.urandom(4).hex()}"
    assert "Created workspace" in operator("workspace", "create", ws, "--owner", alice.name)
    assert f"{bob.name} is member of {ws}" in operator("workspace", "add", ws, bob.name)
    marker = f"incident-marker-{os.urandom(6).hex()}"

    # Alice's Claude Code: its model offers the incident to Bob in the workspace, naming the repo
    # as her remote spells it.
    alice.env.connect("claude-code", server.url, alice.user.key, "--apply")
    approve_project_servers(alice.env)
    offer = {
        "name": "incident/checkout-500s",
        "repo": SSH_REMOTE,
        "summary": f"Checkout answers 500 after the deploy; rolled back the cache flag. {marker}",
        "todos": ["Find why the cache flag breaks checkout"],
        "workspace": ws,
        "to_person": bob.name,
    }
    script = [ToolCall(f"{NAMESPACE}__save_session", offer), Say(f"Handed over to {bob.name}.")]
    with ScriptedAnthropic(script) as model:
        done = alice.env.run(
            [claude(alice.env), "-p", PROMPT, "--permission-mode", "bypassPermissions"],
            alice.user.key,
            ANTHROPIC_BASE_URL=model.base_url,
            **CLAUDE_ENV,
            IS_SANDBOX="1",  # bypassPermissions is refused to root without it (test containers)
        )
        out = f"{done.stdout}\n{done.stderr}\n{model.summary()}\n{model.steps}"
        assert done.returncode == 0 and f"Handed over to {bob.name}." in done.stdout, out
        # The tool's answer came back to Alice's model: offered in the workspace, to Bob.
        answer = json.loads(tool_result_text(model))
        assert (answer["workspace"], answer["handoff"]["to_person"]) == (ws, bob.name), answer
    assert tool_calls.calls("save_session", alice.user.id), out
    saved = runtime.vault.load(
        alice.user.principal, records.parse(records.LoadArgs, {"name": offer["name"], "workspace": ws})
    )
    assert (saved["repo"], saved["workspace"], saved["handoff"]["state"]) == (REPO, ws, "open"), saved
    assert saved["handoff"]["to_person"] == bob.name, saved

    # Carol, not a member: her session start shows nothing of it, and naming the workspace
    # answers exactly as a workspace that does not exist.
    carol.env.connect("codex", server.url, carol.user.key, "--hooks")
    with ModelRecorder() as recorder:
        use_recorder_as_model(carol.env, recorder)
        trust_all_hooks(carol.env, carol.user.key)
        seen, _ = carol.env.until(
            [codex(carol.env), "exec", "--skip-git-repo-check", "hi"],
            carol.user.key,
            lambda: recorder.saw("SessionVault: no saved session for repo"),
            timeout=90,
        )
        heard = f"{recorder.summary()}\n{carol.env.last_output}"
        assert seen and tool_calls.calls("load_session", carol.user.id), heard
        for secret in (marker, ws, alice.name, offer["name"]):
            assert not recorder.saw(secret), f"{secret} reached Carol's model: {heard}"
    refusals = [
        call_tool(server.url, carol.user.key, "list_sessions", {"workspace": name}).replace(name, "NAME")
        for name in (ws, f"no-such-{os.urandom(4).hex()}")
    ]
    assert refusals[0] == refusals[1] and "no workspace named" in refusals[0], refusals

    # Bob's Codex, in his clone (the https spelling): the hook's text names the workspace and
    # who offered it, and his model claims the offer with the call the hook gave it.
    claim = {"repo": REPO, "accept": True, "client": "codex"}
    steps = [codex_tool("load_session", claim), scripted_openai.say("Claimed the incident.")]
    with NamespacedOpenAI(steps, prompt_marker=PROMPT) as model:
        out = run_codex(bob, server.url, model, connect=True)
        first = first_scripted_request(model)
        for text in (marker, f"in workspace {ws}", f"offered by {alice.name}", "Open handoff"):
            assert text in first or json.dumps(text)[1:-1] in first, f"{text!r} not in the hook's text: {out}"
        [claimed] = [answer_of(output) for output in tool_outputs(model)]
    assert (claimed["found"], claimed["name"], claimed["workspace"]) == (True, offer["name"], ws), claimed
    assert marker in claimed["summary"] and claimed["handoff"]["state"] == "accepted", claimed
    assert (claimed["handoff"]["offered_by"], claimed["handoff"]["accepted_by"]) == (alice.name, "codex")
    # Claimed exactly once: Bob's next look finds no open offer, and Alice sees it taken.
    assert json.loads(call_tool(server.url, bob.user.key, "load_session", claim))["found"] is False
    after = runtime.vault.load(
        alice.user.principal, records.parse(records.LoadArgs, {"name": offer["name"], "workspace": ws})
    )
    assert after["handoff"]["state"] == "accepted", after

    # The operator takes Bob out; his next call into the workspace, from the same Codex, is refused.
    assert "no longer a member" in operator("workspace", "remove", ws, bob.name)
    steps = [codex_tool("list_sessions", {"workspace": ws}), scripted_openai.say("Listed.")]
    with NamespacedOpenAI(steps, prompt_marker=PROMPT) as model:
        out = run_codex(bob, server.url, model, connect=False)
        [refused] = tool_outputs(model)
    assert f"no workspace named '{ws}' that you belong to" in refused, f"{refused}\n{out}"
    assert offer["name"] not in refused and marker not in refused, refused


def call_tool(url: str, key: str, tool: str, arguments: dict[str, Any]) -> str:
    """One tools/call over HTTP: its structured answer as JSON, or the refusal's text."""
    body = rpc.rpc_body("tools/call", {"name": tool, "arguments": arguments})
    reply = rpc.request("POST", url, body=body, headers=rpc.mcp_headers(key), timeout=30)
    assert reply.status == 200, reply
    try:
        return json.dumps(rpc.tool_result(reply))
    except Exception as exc:  # a tool error: its text
        return str(exc)
