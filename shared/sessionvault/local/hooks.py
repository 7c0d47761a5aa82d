"""Installing the session-start hook into a client's own settings (Claude Code, Codex, Gemini
CLI, Qwen Code). What the hook prints is `context`; the file editing is `connect.files`."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sessionvault.errors import ConfigFileError
from sessionvault.local import command
from sessionvault.local.connect import files
from sessionvault.local.connect.files import ApplyResult
from sessionvault.names import DEFAULT_URL

# Ours, however it names the command: bare, by absolute path (maybe quoted), or `-m` module.
_OURS = re.compile(r"(^|[\s/])sessionvault(\.cli\.main)?'? hook session-start(\s|$)")


@dataclass(frozen=True)
class HookSpec:
    title: str
    path: Callable[[Path, Path], Path]  # (home, cwd) -> settings file
    # Which session starts: Claude Code, Codex and Qwen Code take a regex, Gemini an exact value.
    matcher: str
    extra: Mapping[str, Any] = field(default_factory=dict)  # more keys of the hook entry

    def group(self, command: str) -> dict[str, Any]:
        """One SessionStart matcher group holding our hook."""
        return {"matcher": self.matcher, "hooks": [{"type": "command", "command": command, **self.extra}]}


HOOK_CLIENTS: dict[str, HookSpec] = {
    "claude-code": HookSpec(
        title="Claude Code",
        path=lambda home, cwd: home / ".claude" / "settings.json",
        matcher="startup|clear",
        extra={"timeout": 5},  # seconds
    ),
    "codex": HookSpec(
        title="OpenAI Codex",
        path=lambda home, cwd: home / ".codex" / "hooks.json",
        matcher="startup|clear",
        extra={"timeout": 5, "statusMessage": "Loading the last SessionVault session"},
    ),
    "gemini": HookSpec(
        title="Gemini CLI",
        path=lambda home, cwd: home / ".gemini" / "settings.json",
        matcher="startup",  # lifecycle matchers are compared as exact strings
        extra={"name": "sessionvault", "timeout": 5000, "description": "Load the last SessionVault session"},
    ),
    "qwen": HookSpec(
        title="Qwen Code",
        path=lambda home, cwd: home / ".qwen" / "settings.json",
        matcher="startup",  # an exact value, `a|b` or a regex
        # Unlike Gemini CLI (its upstream), Qwen Code's hook timeout is in seconds.
        extra={"name": "sessionvault", "timeout": 5, "description": "Load the last SessionVault session"},
    ),
}


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
    path = _hook_spec(client).path(home, cwd)
    try:
        groups = _session_start_groups(files.read(path), path)
    except (OSError, ConfigFileError):
        return []
    return [
        str(h.get("command"))
        for g in groups
        if isinstance(g, dict)
        for h in g.get("hooks") or []
        if _is_ours(h)
    ]


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and bool(_OURS.search(str(hook.get("command", ""))))


def _merged(groups: list[Any], ours: dict[str, Any]) -> list[Any] | None:
    """`groups` with our group in it exactly once, or None when that is already so."""
    count = sum(_is_ours(h) for g in groups if isinstance(g, dict) for h in g.get("hooks") or [])
    if count == 1 and ours in groups:
        return None
    kept = []
    for group in groups:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(hooks, list) and any(_is_ours(h) for h in hooks):
            rest = [h for h in hooks if not _is_ours(h)]
            if not rest:
                continue  # the group held only our (older) hook
            group = {**group, "hooks": rest}
        kept.append(group)
    return [*kept, ours]


def _session_start_groups(data: Mapping[str, Any], path: Path) -> list[Any]:
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigFileError(f"{path}: 'hooks' is not an object; fix it by hand")
    groups = hooks.get("SessionStart", [])
    if not isinstance(groups, list):
        raise ConfigFileError(f"{path}: 'hooks.SessionStart' is not a list; fix it by hand")
    return groups


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
    `<file>.bak-YYYYmmddHHMMSS`, and the edit is re-parsed before it is written.
    """
    spec = _hook_spec(client)
    path = spec.path(home, cwd)
    groups = _session_start_groups(files.read(path.resolve()), path)
    merged = _merged(groups, spec.group(hook_command(client, url)))
    value = groups if merged is None else merged
    return files.set_member(path, "json", "hooks", "SessionStart", value, now=now)


def hook_installed(client: str, *, home: Path, cwd: Path) -> bool:
    """Whether the client's settings hold a sessionvault session-start hook."""
    return bool(installed_commands(client, home=home, cwd=cwd))
