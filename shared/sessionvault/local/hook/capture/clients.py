"""Each client's transcript reader, by the client id `connect` and the hooks use: where the
client keeps a session (`locate`) and what it says (`read`). docs/clients.md cites each place."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from sessionvault.local.hook.capture import (
    claude_code,
    cline,
    codex,
    codex_sessions,
    copilot_cli,
    droid,
    gemini,
    kilo_code,
    opencode,
    qwen,
)
from sessionvault.local.hook.capture.transcript import Transcript

# What `locate` finds and `read` takes: a session file, or for OpenCode its database and an id.
S = TypeVar("S")


@dataclass(frozen=True)
class Reader(Generic[S]):
    read: Callable[[S], Transcript]
    # (home, cwd, session id or "") -> the client's native session, for a hook without a
    # transcript_path in its input and for `sessionvault import <client>`
    locate: Callable[[Path, Path, str], S | None]
    # A client whose hook input is not Claude Code's shape: its fields made session_id, cwd,
    # hook_event_name, transcript_path (and last_assistant_message) first.
    adapt: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None


READERS: dict[str, Reader[Any]] = {
    "claude-code": Reader(claude_code.read, lambda home, cwd, sid: claude_code.locate(home, cwd, sid)),
    "cline-cli": Reader(cline.read, cline.locate, cline.adapt),
    "codex": Reader(
        codex.read,
        lambda home, cwd, sid: codex_sessions.locate(home, cwd, sid, codex_sessions.codex_home(home)),
    ),
    "gemini": Reader(gemini.read, gemini.locate),
    "qwen": Reader(qwen.read, qwen.locate),
    "copilot-cli": Reader(copilot_cli.read, copilot_cli.locate),
    "droid": Reader(droid.read, droid.locate),
    "kilo-code": Reader(kilo_code.read, lambda home, cwd, sid: kilo_code.locate(home, cwd, sid)),
    "opencode": Reader(
        lambda found: opencode.read(found.db, found.session_id),
        lambda home, cwd, sid: opencode.locate(home, cwd, sid),
    ),
}
