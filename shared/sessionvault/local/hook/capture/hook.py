"""`sessionvault hook checkpoint`: what a client runs when work ends (stop, compaction, session
end). It reads the client's own transcript, builds a checkpoint without any model, redacts it,
spools it, and sends what is spooled.

It must never slow or break the client: everything runs under one hard deadline (DEADLINE_S,
well inside the hook timeout `connect --hooks` installs), it always exits 0 and prints what the
client expects of that hook (nothing: each client reads an empty stdout as "carry on"), and any
failure leaves the checkpoint in the spool for the next hook or command that reaches the server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from sessionvault.local import config
from sessionvault.local.hook import hook_key
from sessionvault.local.hook.capture import switch
from sessionvault.local.hook.capture.checkpoint import build
from sessionvault.local.hook.capture.clients import READERS, Reader
from sessionvault.local.hook.capture.spool import Spool
from sessionvault.local.hook.repo import current_branch, current_commit, current_repo
from sessionvault.local.remote import rpc

DEADLINE_S = 8.0  # the whole hook; the installed hook timeout is setup/hook_clients.HOOK_TIMEOUT_S
SEND_TIMEOUT_S = 3.0  # each save_session request
MAX_INPUT = 1_000_000  # a hook's stdin: a JSON object of a few fields
# Events that fire on every turn: sent at most once a THROTTLE_S per client session; in between
# the newest checkpoint waits in the spool (folded), for the next send or the session's end.
# Claude Code, Codex, Qwen Code, Copilot CLI, Droid; Gemini CLI; Cline; Kilo Code's plugin.
EVERY_TURN = frozenset({"Stop", "AfterAgent", "TaskComplete", "session.idle"})
THROTTLE_S = 60.0


@dataclass(frozen=True)
class Outcome:
    """What one run did, for tests and `--verbose`: the checkpoint's name, and counts."""

    name: str = ""
    skipped: str = ""  # why nothing was captured ("" when something was)
    sent: int = 0
    spooled: int = 0


def run(client: str, payload: Mapping[str, Any], env: Mapping[str, str], home: Path) -> Outcome:
    """Capture and send, for a hook `payload` (the client's stdin JSON). May raise: `main` and
    `run_within` contain it."""
    reader = READERS.get(client)
    if reader is not None and reader.adapt is not None:
        payload = reader.adapt(payload)  # a hook input of the client's own shape (Cline's)
    cfg = config.load(env, user_home=home)
    cwd = Path(str(payload.get("cwd") or os.getcwd()))
    repo = current_repo(cwd)
    why = switch.disabled(cfg, repo)
    if why:
        return Outcome(skipped=why)
    if reader is None:
        return Outcome(skipped=f"no transcript reader for client {client!r}")
    path = _transcript_path(payload, reader, home, cwd)
    if path is None:
        return Outcome(skipped="no transcript found")
    last = payload.get("last_assistant_message")
    args = checkpoint_args(reader, path, cwd, str(payload.get("session_id") or ""), last)
    if args is None:
        return Outcome(skipped="nothing to hand over yet")
    spool = Spool(cfg.state)
    spool.put(args)
    event = str(payload.get("hook_event_name") or "")
    ago = spool.sent_ago(args["name"])
    if event in EVERY_TURN and ago is not None and ago < THROTTLE_S:
        return Outcome(name=args["name"], spooled=1)
    sent, left = spool.flush(cfg.url, hook_key.for_hooks(env, cfg.state, cfg.url), SEND_TIMEOUT_S)
    return Outcome(name=args["name"], sent=sent, spooled=left)


def checkpoint_args(
    reader: Reader[Any], found: Any, cwd: Path, session_id: str = "", last_message: object = None
) -> dict[str, Any] | None:
    """The redacted save_session arguments for the client session `found` (what the reader's
    `locate` finds: a file, or OpenCode's database and an id), run in `cwd`
    (its repo, branch and commit); None when it holds nothing to hand over yet. A hook's own
    copy of the last message (Claude Code's Stop) is the newest word, so it wins."""
    transcript = reader.read(found)
    transcript.session_id = transcript.session_id or session_id
    if isinstance(last_message, str) and last_message.strip():
        transcript.last_message = last_message
    repo = current_repo(cwd)
    args = build(transcript, repo=repo, branch=current_branch(cwd), commit=current_commit(cwd))
    return None if args is None else _redacted(args)


def _redacted(args: dict[str, Any]) -> dict[str, Any]:
    """Secrets out on the laptop, before anything is written or sent (the server redacts
    again): the same scrubber the server applies."""
    from sessionvault.core.redact import scrub  # detect-secrets: only when there is a checkpoint

    clean, _ = scrub(args)
    return clean


def _transcript_path(payload: Mapping[str, Any], reader: Reader[Any], home: Path, cwd: Path) -> Path | None:
    given = payload.get("transcript_path")
    if isinstance(given, str) and given:
        path = Path(given).expanduser()
        return path if path.exists() else None
    return reader.locate(home, cwd, str(payload.get("session_id") or ""))


def parse_payload(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text[:MAX_INPUT])
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def run_within(client: str, stdin: TextIO, env: Mapping[str, str], home: Path) -> Outcome:
    """Read the hook input from `stdin` and `run`, all under the hard deadline (a client that
    never closes stdin must not hang the hook either); never raises."""

    def read_and_run() -> Outcome:
        return run(client, parse_payload(stdin.read(MAX_INPUT)), env, home)

    try:
        outcome: Outcome = rpc.within(DEADLINE_S, read_and_run)
        return outcome
    except TimeoutError:
        return Outcome(skipped=f"deadline of {DEADLINE_S} s reached")
    except Exception as exc:
        return Outcome(skipped=f"failed ({type(exc).__name__})")
