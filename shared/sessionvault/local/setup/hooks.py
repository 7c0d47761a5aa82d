"""Installing our hooks into a client's own settings (Claude Code, Codex, Gemini CLI, Qwen Code)
or agent file (Amazon Q Developer CLI): the session-start hook (what it prints is `context`) and,
where the client fires them, the end-of-work hooks that save an automatic checkpoint
(`capture.hook`). The file editing is `connect.files`."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from sessionvault.errors import ConfigFileError
from sessionvault.local.hook.capture.hook import HOOK_TIMEOUT_S
from sessionvault.local.setup import command, files
from sessionvault.local.setup.files import ApplyResult
from sessionvault.names import DEFAULT_URL

# Ours, however it names the command: bare, by absolute path (maybe quoted), or `-m` module.
_OURS = re.compile(r"(^|[\s/])sessionvault(\.cli\.main)?'? hook session-start(\s|$)")
_OURS_CHECKPOINT = re.compile(r"(^|[\s/])sessionvault(\.cli\.main)?'? hook checkpoint(\s|$)")


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

    def item(self, command: str) -> dict[str, Any]:
        """What goes into hooks[event] for our hook: a matcher group, or the bare hook entry."""
        if self.matcher is None:
            return {"command": command, **self.extra}
        return {"matcher": self.matcher, "hooks": [{"type": "command", "command": command, **self.extra}]}

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
    "amazon-q": HookSpec(
        title="Amazon Q Developer CLI",
        # A global agent named q_cli_default replaces the built-in default agent that `q chat`
        # starts with; its `agentSpawn` hooks run when the agent starts, stdout into its context.
        path=lambda home, cwd: home / ".aws" / "amazonq" / "cli-agents" / "q_cli_default.json",
        matcher=None,
        extra={"timeout_ms": 5000},
        event="agentSpawn",
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


def checkpoint_item(spec: HookSpec, event: str, command: str) -> dict[str, Any]:
    """What goes into hooks[event] for the checkpoint hook (a matcher group)."""
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": command, **spec.end_extra}]}
    matcher = spec.end_events[event]
    return group if matcher is None else {"matcher": matcher, **group}


def _hook_spec(client: str) -> HookSpec:
    try:
        return HOOK_CLIENTS[client]
    except KeyError:
        raise ConfigFileError(
            f"{client!r} has no session-start hook; hooks exist for {', '.join(HOOK_CLIENTS)}"
        ) from None


def hook_command(client: str, url: str | None = None) -> str:
    """The hook's command line, naming `sessionvault` by an absolute path (see `command`)."""
    args = ["hook", "session-start", "--client", client]
    if url and url != DEFAULT_URL:
        args += ["--url", url]
    return command.shell_command(*args)


def checkpoint_command(client: str, url: str | None = None) -> str:
    args = ["hook", "checkpoint", "--client", client]
    if url and url != DEFAULT_URL:
        args += ["--url", url]
    return command.shell_command(*args)


def hook_argv(hook_command_line: str) -> list[str] | None:
    """The argv prefix that runs `sessionvault` in a hook's command line, or None."""
    try:
        words = shlex.split(hook_command_line)
    except ValueError:
        return None
    for i in range(len(words) - 1):
        if words[i : i + 2] == ["hook", "session-start"]:
            return words[:i] or None
    return None


def installed_commands(client: str, *, home: Path, cwd: Path) -> list[str]:
    """The command lines of our session-start hooks in the client's settings."""
    spec = _hook_spec(client)
    path = spec.path(home, cwd)
    try:
        items = _event_items(spec, files.read(path), path)
    except (OSError, ConfigFileError):
        return []
    return [str(h.get("command")) for item in items for h in spec.hooks_of(item) if _is_ours(h)]


def _is_ours(hook: Any, which: re.Pattern[str] = _OURS) -> bool:
    return isinstance(hook, dict) and bool(which.search(str(hook.get("command", ""))))


def _merged(
    spec: HookSpec, items: list[Any], ours: dict[str, Any], which: re.Pattern[str] = _OURS
) -> list[Any] | None:
    """`items` with our hook in it exactly once, or None when that is already so."""
    count = sum(_is_ours(h, which) for item in items for h in spec.hooks_of(item))
    if count == 1 and ours in items:
        return None
    kept = []
    for item in items:
        hooks = spec.hooks_of(item)
        if any(_is_ours(h, which) for h in hooks):
            rest = [h for h in hooks if not _is_ours(h, which)]
            if spec.matcher is None or not rest:
                continue  # our (older) hook, or a group that held only it
            item = {**item, "hooks": rest}
        kept.append(item)
    return [*kept, ours]


def _event_items(spec: HookSpec, data: Mapping[str, Any], path: Path) -> list[Any]:
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigFileError(f"{path}: 'hooks' is not an object; fix it by hand")
    items = hooks.get(spec.event, [])
    if not isinstance(items, list):
        raise ConfigFileError(f"{path}: 'hooks.{spec.event}' is not a list; fix it by hand")
    return items


def install_hooks(
    client: str,
    *,
    home: Path,
    cwd: Path,
    now: datetime | None = None,
    url: str | None = None,
) -> ApplyResult:
    """Add the session-start hook to the client's own settings, keeping everything else.

    Idempotent: when the hook is already there, nothing is written and no backup is made.
    Otherwise an older sessionvault hook is replaced, the old file is copied to
    `<file>.bak-YYYYmmddHHMMSS`, and the edit is re-parsed before it is written. A missing file
    with a `seed` (Amazon Q's default agent) is created from it.
    """
    spec = _hook_spec(client)
    path = spec.path(home, cwd)
    ours = spec.item(hook_command(client, url))
    if spec.seed and not path.resolve().exists():
        text = json.dumps({**spec.seed, "hooks": {spec.event: [ours]}}, indent=2) + "\n"
        files.write_atomic(path.resolve(), text, 0o644)
        return ApplyResult(path=path, changed=True, backup=None)
    items = _event_items(spec, files.read(path.resolve()), path)
    merged = _merged(spec, items, ours)
    value = items if merged is None else merged
    return files.set_member(path, "json", "hooks", spec.event, value, now=now)


def install_checkpoint_hooks(
    client: str,
    *,
    home: Path,
    cwd: Path,
    now: datetime | None = None,
    url: str | None = None,
) -> list[ApplyResult]:
    """Add the checkpoint hook to each of the client's end-of-work events, as `install_hooks`
    adds the session-start hook (idempotent, backed up, everything else kept); [] for a client
    without such events."""
    spec = _hook_spec(client)
    path = spec.path(home, cwd)
    line = checkpoint_command(client, url)
    results = []
    for event in spec.end_events:
        end = replace(spec, event=event)
        items = _event_items(end, files.read(path.resolve()), path)
        merged = _merged(end, items, checkpoint_item(spec, event, line), _OURS_CHECKPOINT)
        value = items if merged is None else merged
        results.append(files.set_member(path, "json", "hooks", event, value, now=now))
    return results


def checkpoint_events(client: str, *, home: Path, cwd: Path) -> list[str]:
    """The events whose hooks hold our checkpoint hook in the client's settings."""
    spec = _hook_spec(client)
    path = spec.path(home, cwd)
    found = []
    for event in spec.end_events:
        end = replace(spec, event=event)
        try:
            items = _event_items(end, files.read(path), path)
        except (OSError, ConfigFileError):
            return []
        if any(_is_ours(h, _OURS_CHECKPOINT) for item in items for h in end.hooks_of(item)):
            found.append(event)
    return found


def hook_installed(client: str, *, home: Path, cwd: Path) -> bool:
    """Whether the client's settings hold a sessionvault session-start hook."""
    return bool(installed_commands(client, home=home, cwd=cwd))
