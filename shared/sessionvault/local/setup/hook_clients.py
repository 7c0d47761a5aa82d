"""Which clients get our hooks, and where and how each one wants them (`HookSpec`): the file,
the session-start event and its matcher, the end-of-work events, the keys of a hook entry.
`hooks` installs them; docs/clients.md cites each client's documentation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The end-of-work hook's timeout as installed: well over the hook's own deadline (DEADLINE_S in
# local/hook/capture/hook.py). Here, not there: `connect --help` names the hook clients, and
# every CLI start builds that parser (the capture hook's imports cost ~0.1 s).
HOOK_TIMEOUT_S = 20


@dataclass(frozen=True)
class HookSpec:
    title: str
    path: Callable[[Path, Path], Path]  # (home, cwd) -> settings file
    # Which session starts: Claude Code, Codex and Qwen Code take a regex, Gemini an exact value;
    # None for a flat list of hooks without matcher groups (Amazon Q's agent hooks).
    matcher: str | None
    extra: Mapping[str, Any] = field(default_factory=dict)  # more keys of the hook entry
    event: str = "SessionStart"  # the key under "hooks"
    # What a missing file starts as. Amazon Q's `q_cli_default.json` replaces the built-in
    # default agent as a whole, so it must first hold that agent's documented fields.
    seed: Mapping[str, Any] = field(default_factory=dict)
    # The client's end-of-work events (stop, compaction, session end) that get the checkpoint
    # hook, each with its matcher (None: the group has no matcher key); docs/clients.md cites them.
    end_events: Mapping[str, str | None] = field(default_factory=dict)
    end_extra: Mapping[str, Any] = field(default_factory=dict)
    # The key of a hook entry that holds its command line: GitHub Copilot CLI's is "bash".
    command_key: str = "command"
    typed: bool = True  # the entry says "type": "command" (Amazon Q's agent hooks do not)
    # Not a settings file's hooks but something of the client's own kind, each with its own
    # installer in `hooks`: None (a JSON settings file), "cline" (a plugin and one executable per
    # event in a folder) or "opencode" (an OpenCode plugin that runs our commands: OpenCode and
    # Kilo Code).
    kind: str | None = None
    # Tools the client must offer the model without asking, in its own `tools.allowed` list, for
    # the session-start text to be usable: Gemini CLI offers a headless run (`gemini -p`) no tool
    # that needs a confirmation, so without these its model never sees load_session. Reads
    # only: a save or a delete still asks.
    allowed_tools: tuple[str, ...] = ()
    # Why a client is not proven with its real CLI here (docs/clients.md; `connect` and
    # `doctor` say it); "" for a client whose hooks a real run of it proved.
    unverified: str = ""

    def item(self, command: str, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """What goes into hooks[event] for our hook: a matcher group, or the bare hook entry."""
        extra = self.extra if extra is None else extra
        if not self.typed:
            return {self.command_key: command, **extra}
        entry = {"type": "command", self.command_key: command, **extra}
        return entry if self.matcher is None else {"matcher": self.matcher, "hooks": [entry]}

    def hooks_of(self, item: Any) -> list[Any]:
        """The hook entries inside one item of hooks[event]."""
        if self.matcher is None:
            return [item]
        hooks = item.get("hooks") if isinstance(item, dict) else None
        return hooks if isinstance(hooks, list) else []


HOOK_CLIENTS: dict[str, HookSpec] = {
    "claude-code": HookSpec(
        title="Claude Code",
        path=lambda home, cwd: home / ".claude" / "settings.json",
        matcher="startup|clear",
        extra={"timeout": 5},  # seconds
        # https://code.claude.com/docs/en/hooks: Stop (every turn), PreCompact, SessionEnd.
        end_events={"Stop": None, "PreCompact": "manual|auto", "SessionEnd": None},
        end_extra={"timeout": HOOK_TIMEOUT_S},
    ),
    "codex": HookSpec(
        title="OpenAI Codex",
        path=lambda home, cwd: home / ".codex" / "hooks.json",
        matcher="startup|clear",
        extra={"timeout": 5, "statusMessage": "Loading the last SessionVault session"},
        # https://developers.openai.com/codex/hooks: Stop (every turn), PreCompact, SessionEnd
        # (each `codex exec` ends with one); fixture: tests/fixtures/transcripts/codex-0.171.0.
        end_events={"Stop": None, "PreCompact": None, "SessionEnd": None},
        end_extra={"timeout": HOOK_TIMEOUT_S},
    ),
    "gemini": HookSpec(
        title="Gemini CLI",
        path=lambda home, cwd: home / ".gemini" / "settings.json",
        matcher="startup",  # lifecycle matchers are compared as exact strings
        extra={"name": "sessionvault", "timeout": 5000, "description": "Load the last SessionVault session"},
        # AfterAgent (end of every turn) and SessionEnd. Not PreCompress: 0.61.0 fires it before
        # every model call, compressing or not (fixture: tests/fixtures/transcripts/gemini-0.61.0).
        end_events={"AfterAgent": None, "SessionEnd": None},
        end_extra={"name": "sessionvault-checkpoint", "timeout": HOOK_TIMEOUT_S * 1000},
        # Gemini CLI's names for MCP tools: mcp_<server>_<tool> (a real `gemini -p`, tests/clients).
        allowed_tools=tuple(
            f"mcp_sessionvault_{t}" for t in ("load_session", "list_sessions", "search_sessions")
        ),
    ),
    "qwen": HookSpec(
        title="Qwen Code",
        path=lambda home, cwd: home / ".qwen" / "settings.json",
        matcher="startup",  # an exact value, `a|b` or a regex
        # Unlike Gemini CLI (its upstream), Qwen Code's hook timeout is in seconds.
        extra={"name": "sessionvault", "timeout": 5, "description": "Load the last SessionVault session"},
        # Claude-style names: Stop (every turn), PreCompact, SessionEnd (interactive sessions only:
        # a headless run ends without one; fixture: tests/fixtures/transcripts/qwen-0.24.4).
        end_events={"Stop": None, "PreCompact": None, "SessionEnd": None},
        end_extra={"name": "sessionvault-checkpoint", "timeout": HOOK_TIMEOUT_S},
    ),
    "copilot-cli": HookSpec(
        title="GitHub Copilot CLI",
        # User-level hooks (https://docs.github.com/en/copilot/reference/copilot-cli-reference/
        # cli-hooks-reference): every ~/.copilot/hooks/*.json, {"version": 1, "hooks": {...}},
        # each event a flat list of {"type": "command", "bash": ..., "timeoutSec": ...}. The
        # PascalCase event names get Claude Code's snake_case input (session_id,
        # transcript_path, hook_event_name), which `capture.hook` reads. SessionStart fires on
        # every start (no matcher); a flat {"additionalContext": ...} on stdout reaches the model.
        path=lambda home, cwd: home / ".copilot" / "hooks" / "sessionvault.json",
        matcher=None,
        command_key="bash",
        extra={"timeoutSec": 5},
        seed={"version": 1},
        # Stop (every turn, with transcript_path), PreCompact, SessionEnd (each `-p` run ends
        # with one); fixture: tests/fixtures/transcripts/copilot-cli-1.0.102.
        end_events={"Stop": None, "PreCompact": None, "SessionEnd": None},
        end_extra={"timeoutSec": HOOK_TIMEOUT_S},
    ),
    "droid": HookSpec(
        title="Factory Droid",
        # Claude Code's hook shape, in ~/.factory/settings.json
        # (https://docs.factory.ai/reference/hooks-reference): SessionStart (matcher startup,
        # resume, clear, compact) with hookSpecificOutput.additionalContext, which reached the
        # model in a real run; every input has session_id, transcript_path, hook_event_name.
        path=lambda home, cwd: home / ".factory" / "settings.json",
        matcher="startup|clear",
        extra={"timeout": 5},
        # Stop (every turn), PreCompact, SessionEnd (each `droid exec` ends with one); fixture:
        # tests/fixtures/transcripts/droid-0.225.2.
        end_events={"Stop": None, "PreCompact": "manual|auto", "SessionEnd": None},
        end_extra={"timeout": HOOK_TIMEOUT_S},
    ),
    "cline-cli": HookSpec(
        title="Cline (CLI)",
        # A plugin (~/.cline/plugins/sessionvault.js) whose rule runs the session-start hook: a
        # TaskStart hook's output never reaches the model in the 3.x CLI. The checkpoint is one
        # script per end-of-work event in ~/.cline/hooks (hook_files says why each).
        path=lambda home, cwd: home / ".cline" / "plugins" / "sessionvault.js",
        matcher=None,
        kind="cline",
        # TaskComplete (each turn's end), PreCompact, SessionShutdown; fixture:
        # tests/fixtures/transcripts/cline-3.0.65.
        end_events={"TaskComplete": None, "PreCompact": None, "SessionShutdown": None},
    ),
    "opencode": HookSpec(
        title="OpenCode",
        # No command hooks: one plugin (~/.config/opencode/plugins/sessionvault.js) adds the last
        # session to the system prompt and saves a checkpoint on session.idle (hook_files), the
        # same plugin as Kilo Code's (Kilo Code is built on OpenCode and its plugin system).
        path=lambda home, cwd: home / ".config" / "opencode" / "plugins" / "sessionvault.js",
        matcher=None,
        kind="opencode",
        end_events={"session.idle": None},
    ),
    "kilo-code": HookSpec(
        title="Kilo Code (CLI)",
        # No command hooks: one plugin (~/.config/kilo/plugins/sessionvault.js) adds the last
        # session to the system prompt and saves a checkpoint on session.idle (hook_files).
        path=lambda home, cwd: home / ".config" / "kilo" / "plugins" / "sessionvault.js",
        matcher=None,
        kind="opencode",
        end_events={"session.idle": None},
    ),
    "amazon-q": HookSpec(
        title="Amazon Q Developer CLI",
        # A global agent named q_cli_default replaces the built-in default agent that `q chat`
        # starts with; its `agentSpawn` hooks run when the agent starts, stdout into its context.
        path=lambda home, cwd: home / ".aws" / "amazonq" / "cli-agents" / "q_cli_default.json",
        matcher=None,
        typed=False,
        extra={"timeout_ms": 5000},
        event="agentSpawn",
        unverified=(
            "no real `q` ran here: Amazon Q Developer CLI is not on npm (AWS ships it from its own "
            "download site, which this machine cannot reach), so its agent file and agentSpawn "
            "hook follow its documentation only"
        ),
        seed={  # the built-in default agent, as documented, so replacing it changes nothing else
            "name": "q_cli_default",
            "description": "Default agent, with the SessionVault session-start hook",
            "tools": ["*"],
            "allowedTools": ["fs_read"],
            "resources": ["file://AmazonQ.md", "file://README.md", "file://.amazonq/rules/**/*.md"],
            "useLegacyMcpJson": True,
        },
    ),
}
