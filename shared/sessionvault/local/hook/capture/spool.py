"""Checkpoints not yet on the server: one 0600 file per checkpoint name in the state folder.

A checkpoint is written here before it is sent and removed once the server acknowledged it, so
nothing is lost when the server is unreachable, the hook is killed at its deadline, or the
laptop sleeps mid-request. A newer checkpoint of the same name replaces the spooled one (the
server only needs the latest state of a client session: that is how a checkpoint on every turn
folds into one version). A resend after a lost reply is harmless: the server adds no version for
content its head already holds."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessionvault.errors import ToolCallFailed
from sessionvault.local.remote import rpc

FOLDER = "spool"
_SENT = ".sent"  # a name's marker: its mtime is when that name was last acknowledged


@dataclass(frozen=True)
class Entry:
    path: Path
    args: dict[str, Any]


class Spool:
    def __init__(self, state: Path) -> None:
        self.folder = state / FOLDER

    def _file(self, name: str) -> Path:
        return self.folder / (hashlib.sha256(name.encode()).hexdigest()[:32] + ".json")

    def put(self, args: dict[str, Any]) -> Path:
        """Spool `args` (replacing what was spooled under its name); written aside, then renamed,
        so a reader never sees half a file."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = self._file(str(args["name"]))
        aside = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(args, f)
        os.replace(aside, target)
        return target

    def entries(self) -> Iterator[Entry]:
        """Spooled checkpoints, oldest first; an unreadable file is skipped (and left)."""
        try:
            files = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
        except OSError:
            return
        for path in files:
            try:
                args = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(args, dict) and isinstance(args.get("name"), str):
                yield Entry(path, args)

    def done(self, entry: Entry) -> None:
        """The server has `entry`: drop it (unless a newer one replaced it meanwhile) and mark
        when its name was sent."""
        try:
            if json.loads(entry.path.read_text()) == entry.args:
                entry.path.unlink()
        except (OSError, ValueError):
            pass
        marker = self._file(str(entry.args["name"])).with_suffix(_SENT)
        marker.touch(mode=0o600)

    def flush(self, url: str, key: str, timeout: float) -> tuple[int, int]:
        """Send every spooled checkpoint, oldest first, until one fails: (sent, still spooled).
        `timeout` bounds each request's socket operations."""
        entries = list(self.entries())
        sent = 0
        if key.strip():
            for entry in entries:
                answer = _send(url, key.strip(), entry.args, timeout)
                if answer == UNREACHABLE:
                    break
                self.done(entry)  # sent, or refused for good (it would never be taken)
                sent += answer == SENT
        return sent, len(list(self.entries()))

    def sent_ago(self, name: str) -> float | None:
        """Seconds since `name` was last acknowledged; None if never (from this machine)."""
        try:
            return time.time() - self._file(name).with_suffix(_SENT).stat().st_mtime
        except OSError:
            return None


SENT, REFUSED, UNREACHABLE = "sent", "refused", "unreachable"


def _send(url: str, key: str, args: dict[str, Any], timeout: float) -> str:
    """SENT; REFUSED when the server will never take it (the tool said no: a validation error);
    UNREACHABLE for anything that may pass later (no server, a refused key, a rate limit, a
    quota, a 5xx): then it stays spooled, and so does everything after it."""
    body = rpc.rpc_body("tools/call", {"name": "checkpoint_session", "arguments": args})
    try:
        reply = rpc.request("POST", url, body=body, headers=rpc.mcp_headers(key), timeout=timeout)
    except Exception:
        return UNREACHABLE
    if reply.status != 200:
        return UNREACHABLE
    try:
        return SENT if rpc.tool_result(reply).get("saved") else UNREACHABLE
    except ToolCallFailed as exc:
        return REFUSED if "invalid arguments" in str(exc) else UNREACHABLE
    except (ValueError, LookupError, TypeError, AttributeError):
        return UNREACHABLE
