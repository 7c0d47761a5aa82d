"""Installing our hooks into a client's own settings (Claude Code, Codex, Gemini CLI, Qwen Code)
or agent file (Amazon Q Developer CLI): the session-start hook (what it prints is `context`) and,
where the client fires them, the end-of-work hooks that save an automatic checkpoint
(`capture.hook`). The file editing is `connect.files`."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from sessionvault.errors import ConfigFileError
from sessionvault.local.host import command
from sessionvault.local.setup import files, hook_files
from sessionvault.local.setup.files import ApplyResult
from sessionvault.local.setup.hook_clients import HOOK_CLIENTS as HOOK_CLIENTS
from sessionvault.local.setup.hook_clients import HookSpec as HookSpec
from sessionvault.names import DEFAULT_URL

# Ours, however it names the command: bare, by absolute path (maybe quoted), or `-m` module.
_OURS = re.compile(r"(^|[\s/])sessionvault(\.cli\.main)?'? hook session-start(\s|$)")
_OURS_CHECKPOINT = re.compile(r"(^|[\s/])sessionvault(\.cli\.main)?'? hook checkpoint(\s|$)")


def checkpoint_item(spec: HookSpec, event: str, command: str) -> dict[str, Any]:
    """What goes into hooks[event] for the checkpoint hook: a matcher group, or for a client
    whose events hold flat lists (Copilot CLI) the bare entry."""
    if spec.matcher is None:
        return spec.item(command, spec.end_extra)
    group: dict[str, Any] = {"hooks": [{"type": "command", spec.command_key: command, **spec.end_extra}]}
    matcher = spec.end_events[event]
    return group if matcher is None else {"matcher": matcher, **group}


def _hook_spec(client: str) -> HookSpec:
    try:
        return HOOK_CLIENTS[client]
    except KeyError:
        raise ConfigFileError(
            f"{client!r} has no session-start hook; hooks exist for {', '.join(HOOK_CLIENTS)}"
        ) from None


def _args(event: str, client: str, url: str | None) -> list[str]:
    args = ["hook", event, "--client", client]
    return [*args, "--url", url] if url and url != DEFAULT_URL else args


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
    if spec.kind:
        found = hook_files.argv_in(path, "COMMAND" if spec.kind == "cline" else "START")
        return [shlex.join(found)] if found else []
    try:
        items = _event_items(spec, files.read(path), path)
    except (OSError, ConfigFileError):
        return []
    return [str(h.get(spec.command_key)) for item in items for h in spec.hooks_of(item) if _is_ours(h)]


def _is_ours(hook: Any, which: re.Pattern[str] = _OURS) -> bool:
    line = hook.get("command", hook.get("bash", "")) if isinstance(hook, dict) else ""
    return bool(which.search(str(line)))


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


def install(client: str, *, home: Path, cwd: Path, url: str | None = None) -> list[ApplyResult]:
    """The session-start hook and, where the client fires them, the end-of-work hooks: each
    file written once (`connect --hooks`). A settings file gets all its events in one edit, so
    that its backup (if it existed) is of the file as the user left it, never of a version of
    ours; a plugin file is written whole."""
    spec = _hook_spec(client)
    path = spec.path(home, cwd)
    if spec.kind == "cline":  # the plugin, then one script per end event
        return [_install_file(spec, client, path, url), *_cline_scripts(spec, client, home, url)]
    if spec.kind:
        return [_install_file(spec, client, path, url)]  # one plugin does both
    values = _hook_values(spec, client, path, url, start=True, end=True)
    if spec.allowed_tools:
        values[("tools", "allowed")] = _allowed(files.read(path.resolve()), spec.allowed_tools, path)
    return [files.set_members(path, "json", values, initial=_seed_text(spec))]


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
    Otherwise an older sessionvault hook is replaced, the old file is copied into the state
    folder (files.Backups), and the edit is re-parsed before it is written. A missing file
    with a `seed` (Amazon Q's default agent, Copilot CLI's hooks file) is created from it.
    """
    spec = _hook_spec(client)
    path = spec.path(home, cwd)
    if spec.kind:
        return _install_file(spec, client, path, url)
    values = _hook_values(spec, client, path, url, start=True, end=False)
    return files.set_members(path, "json", values, now=now, initial=_seed_text(spec))


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
    if spec.kind == "opencode":
        return [_install_file(spec, client, path, url)]  # one plugin does both
    if spec.kind == "cline":
        return _cline_scripts(spec, client, home, url)
    if not spec.end_events:
        return []
    values = _hook_values(spec, client, path, url, start=False, end=True)
    return [files.set_members(path, "json", values, now=now, initial=_seed_text(spec))]


def _hook_values(
    spec: HookSpec, client: str, path: Path, url: str | None, *, start: bool, end: bool
) -> dict[tuple[str, str], Any]:
    """("hooks", event) for each event asked for, ours in it exactly once, the rest kept."""
    data = files.read(path.resolve())
    values: dict[tuple[str, str], Any] = {}
    if start:
        items = _event_items(spec, data, path)
        values[("hooks", spec.event)] = _merged(spec, items, spec.item(hook_command(client, url))) or items
    line = checkpoint_command(client, url)
    for event in spec.end_events if end else ():
        one = replace(spec, event=event)
        items = _event_items(one, data, path)
        ours = checkpoint_item(spec, event, line)
        values[("hooks", event)] = _merged(one, items, ours, _OURS_CHECKPOINT) or items
    return values


def _allowed(data: Mapping[str, Any], ours: tuple[str, ...], path: Path) -> list[Any]:
    """The client's `tools.allowed` list with ours in it, the user's entries kept in order."""
    tools = data.get("tools", {})
    listed = tools.get("allowed", []) if isinstance(tools, dict) else []
    if not isinstance(listed, list):
        raise ConfigFileError(f"{path}: 'tools.allowed' is not a list; fix it by hand")
    return [*listed, *(t for t in ours if t not in listed)]


def _seed_text(spec: HookSpec) -> str:
    """What a missing settings file starts from: the client's seed (its required keys), or {}."""
    return json.dumps(spec.seed, indent=2) + "\n" if spec.seed else ""


def _cline_scripts(spec: HookSpec, client: str, home: Path, url: str | None) -> list[ApplyResult]:
    argv = [*command.sessionvault_argv(), *_args("checkpoint", client, url)]
    return [
        hook_files.put(hook_files.cline_hook_path(home, e), hook_files.cline_hook(e, argv), 0o755)
        for e in spec.end_events
    ]


def checkpoint_events(client: str, *, home: Path, cwd: Path) -> list[str]:
    """The events whose hooks hold our checkpoint hook in the client's settings."""
    spec = _hook_spec(client)
    path = spec.path(home, cwd)
    if spec.kind == "opencode":
        return list(spec.end_events) if hook_files.argv_in(path, "CHECKPOINT") else []
    if spec.kind == "cline":
        ours = (hook_files.command_in_script(hook_files.cline_hook_path(home, e)) for e in spec.end_events)
        return [
            e for e, line in zip(spec.end_events, ours, strict=True) if line and _OURS_CHECKPOINT.search(line)
        ]
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


def _install_file(spec: HookSpec, client: str, path: Path, url: str | None) -> ApplyResult:
    """A client whose hooks are a plugin file of its own (hook_files): written whole."""
    start = [*command.sessionvault_argv(), *_args("session-start", client, url)]
    if spec.kind == "cline":
        return hook_files.put(path, hook_files.cline_plugin(start), 0o644)
    checkpoint = [*command.sessionvault_argv(), *_args("checkpoint", client, url)]
    return hook_files.put(path, hook_files.opencode_plugin(spec.title, client, start, checkpoint), 0o644)


def hook_installed(client: str, *, home: Path, cwd: Path) -> bool:
    """Whether the client's settings hold a sessionvault session-start hook."""
    return bool(installed_commands(client, home=home, cwd=cwd))
