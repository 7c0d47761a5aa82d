"""Each client's transcript reader, by the client id `connect` and the hooks use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sessionvault.local.capture import claude_code
from sessionvault.local.capture.transcript import Transcript


@dataclass(frozen=True)
class Reader:
    read: Callable[[Path], Transcript]
    # (home, cwd, session id or "") -> the client's native session file, for a hook without a
    # transcript_path in its input and for `sessionvault import <client>`
    locate: Callable[[Path, Path, str], Path | None]


READERS: dict[str, Reader] = {
    "claude-code": Reader(claude_code.read, lambda home, cwd, sid: claude_code.locate(home, cwd, sid)),
}
