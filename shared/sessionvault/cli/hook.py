"""`sessionvault hook session-start`: what Claude Code, Codex, Gemini CLI, Qwen Code and
Amazon Q Developer CLI run on every session start. The fast path: `cli.main` hands `hook ...`
here before building any other parser, and nothing heavier than the standard library is imported."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from sessionvault.local import config
from sessionvault.local.config import URL_HELP
from sessionvault.local.hook import session_start as context
from sessionvault.names import URL_ENV

# `sessionvault hook --help` is answered by the fast path (`main`), not the full parser: one text.
DESCRIPTION = (
    "Commands that AI clients run as hooks, never by hand: session-start prints the repo's last"
    " handoff as the new session's context, checkpoint saves an automatic checkpoint from the"
    " client's transcript. Install them with `sessionvault connect <client> --hooks`; the hooks"
    " send their own key (the checkpoint scope) from the state folder's hooks.key."
)


def _add_events(events: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = events.add_parser(
        "session-start",
        help="print the latest session for this repo as start-up context",
        description="Print the latest session for the current repo in the client's session-start "
        "hook format. Always exits 0: on any problem it prints a short note instead.",
    )
    # A free string, not `choices`: a hook must never fail on its arguments.
    p.add_argument(
        "--client", default="claude-code", help=f"{', '.join(context.OUTPUT)} (default: claude-code)"
    )
    p.add_argument("--url", default=None, help=f"server URL (default: {URL_HELP})")
    p.set_defaults(func=_run_session_start)
    c = events.add_parser(
        "checkpoint",
        help="save an automatic checkpoint from the client's own transcript",
        description="Read the hook input on stdin, build a checkpoint from the client's transcript "
        "(no model), redact it, spool it and send it. Always exits 0 and prints nothing.",
    )
    c.add_argument("--client", default="claude-code", help="the client whose transcript to read")
    c.add_argument("--url", default=None, help=f"server URL (default: {URL_HELP})")
    c.set_defaults(func=_run_checkpoint)


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `sessionvault hook session-start [--client] [--url]`."""
    p = subparsers.add_parser("hook", help="commands that AI clients run as hooks", description=DESCRIPTION)
    _add_events(p.add_subparsers(dest="event", required=True, metavar="event"))


def _run_session_start(args: argparse.Namespace) -> int:
    try:
        sys.stdout.write(context.session_start(args.client, args.url) + "\n")
        sys.stdout.flush()
    except BaseException:  # e.g. a closed stdout: still exit 0, never a traceback
        pass
    _fired(args.client, "session-start")
    return 0


def _fired(client: str, event: str, more: dict[str, object] | None = None) -> None:
    """For `doctor`: this client's hook ran (capture.fired; never raises, never slows)."""
    try:
        from sessionvault.local.hook.capture import fired

        fired.record(config.state_folder(os.environ), client, event, more)
    except BaseException:
        pass


def _run_checkpoint(args: argparse.Namespace) -> int:
    try:
        from sessionvault.local.hook.capture import hook

        env = {**os.environ, **({URL_ENV: args.url} if args.url else {})}
        done = hook.run_within(args.client, sys.stdin, env, Path.home())
        said = done.skipped or (f"sent {done.name}" if done.sent else f"spooled {done.name}")
        _fired(
            args.client,
            "checkpoint",
            {"outcome": said[:300], **({"saved": time.time()} if done.sent else {})},
        )
    except BaseException:  # never a traceback, never a failing hook
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    """`sessionvault hook ...` on its own: main(["session-start", "--client", "gemini"])."""
    parser = argparse.ArgumentParser(prog="sessionvault hook", description=DESCRIPTION)
    _add_events(parser.add_subparsers(dest="event", required=True, metavar="event"))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code
