"""`sessionvault capture on|off|status` (automatic checkpoints for the repo here) and
`sessionvault import <client>` (the same checkpoint, on demand, from a client's own session
files, for a user who did not have the hook installed)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from sessionvault.errors import ConfigError
from sessionvault.local import target
from sessionvault.local.capture import switch
from sessionvault.local.capture.clients import READERS
from sessionvault.local.capture.hook import SEND_TIMEOUT_S, checkpoint_args
from sessionvault.local.capture.spool import Spool
from sessionvault.local.repo import current_repo
from sessionvault.local.rpc import require_safe_url
from sessionvault.names import DEFAULT_URL, KEY_ENV, URL_ENV


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "capture",
        help="turn automatic checkpoints on or off for this repo, or show whether they are on",
        description="Automatic checkpoints (the end-of-work hooks `connect --hooks` installs) for the "
        f"repo of the current folder; ${switch.ENV}=off turns them off everywhere.",
    )
    p.add_argument("state", choices=["on", "off", "status"])
    p.set_defaults(func=_run_capture)

    i = subparsers.add_parser(
        "import",
        help="save a checkpoint from a client's own session files (no model)",
        description="Build the checkpoint an end-of-work hook would have saved, from the native "
        "session files of CLIENT for the current folder, and save it (or print it with --dry-run).",
    )
    i.add_argument("client", choices=list(READERS), metavar="client", help=", ".join(READERS))
    which = i.add_mutually_exclusive_group()
    which.add_argument("--session", default="", help="the client's session id (default: the newest here)")
    which.add_argument("--latest", action="store_true", help="the newest session here (the default)")
    i.add_argument("--dry-run", action="store_true", help="print what would be saved; save nothing")
    i.add_argument("--url", default=None, help=f"server URL (default: ${URL_ENV}, else {DEFAULT_URL})")
    i.set_defaults(func=_run_import)


def _run_capture(args: argparse.Namespace) -> int:
    state, repo = target.state_folder(), current_repo()
    if args.state != "status":
        switch.set_repo(state, repo, on=args.state == "on")
    why = switch.disabled(os.environ, state, repo)
    print(f"automatic checkpoints for {repo}: " + (f"off ({why})" if why else "on"))
    return 0


def _run_import(args: argparse.Namespace) -> int:
    reader, cwd = READERS[args.client], Path.cwd()
    path = reader.locate(Path.home(), cwd, args.session)
    if path is None:
        which = f"session {args.session}" if args.session else "any session"
        raise ConfigError(
            f"no {args.client} {which} found for {cwd}; see docs/clients.md for where it keeps them"
        )
    checkpoint = checkpoint_args(reader, path, cwd, args.session)
    if checkpoint is None:
        raise ConfigError(f"{path} holds nothing to hand over yet (no request, no reply)")
    if args.dry_run:
        print(json.dumps(checkpoint, indent=2, ensure_ascii=False))
        return 0
    state = target.state_folder()
    url = args.url or target.default_url(os.environ, state)
    require_safe_url(url)
    key, _ = target.default_key(os.environ, state, url)
    if not key:
        raise ConfigError(f"no API key: set {KEY_ENV} (see `sessionvault doctor`)")
    spool = Spool(state)
    spool.put(checkpoint)
    _, left = spool.flush(url, key, SEND_TIMEOUT_S)
    if left:
        print(f"{checkpoint['name']}: not saved yet ({url} did not take it); it is spooled", file=sys.stderr)
        return 1
    print(
        f"saved {checkpoint['name']} ({len(checkpoint['files'])} files, {len(checkpoint['errors'])} errors)"
    )
    return 0
