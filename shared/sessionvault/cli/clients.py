"""The laptop-side commands: `connect` (client configs), `bridge` (stdio for Claude Desktop)
and `doctor` (what is wrong, and the command that fixes it). `hook` has its own module: it
runs on every client start and must import almost nothing."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sessionvault.errors import ConfigError, ConfigFileError
from sessionvault.local.config import SERVER_URL_HELP, URL_HELP
from sessionvault.local.remote.rpc import require_safe_url
from sessionvault.local.setup import profile as shell_profile
from sessionvault.local.setup import registry
from sessionvault.local.setup.hook_clients import HOOK_CLIENTS
from sessionvault.names import KEY_ENV

if TYPE_CHECKING:
    from sessionvault.local.setup.files import ApplyResult

# What `sessionvault bridge --help` says; the bridge module itself imports the MCP SDK (about
# half a second), so it is imported only when the bridge runs.
BRIDGE_HELP = """\
A stdio MCP server for clients that can only start a local command (Claude Desktop). It
forwards tools, prompts and resources, unchanged, to a SessionVault server over HTTP, with the
key from $SESSIONVAULT_API_KEY. stdout carries the protocol; logs go to stderr; the key is
never logged. `sessionvault connect claude-desktop` writes the config that starts it."""


def add_connect(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `sessionvault connect <client> [--url] [--key] [--apply] [--no-env]`."""
    p = subparsers.add_parser(
        "connect",
        help="print or write the MCP config that connects a client to SessionVault",
        description="Print the config snippet for CLIENT, or with --apply write it into "
        "the client's own config file. A file that changes is first copied into the state "
        "folder (backups/<date-time>/<the file's path>), never beside it: a project's files "
        "are one `git add .` away from a commit.",
    )
    p.add_argument(
        "client", choices=list(registry.CLIENTS), metavar="client", help=", ".join(registry.CLIENTS)
    )
    p.add_argument(
        "--url",
        default=None,
        help=f"server URL (default: {SERVER_URL_HELP})",
    )
    p.add_argument(
        "--key", default=None, help=f"API key (default: ${KEY_ENV}, else the deployed stack's saved key)"
    )
    p.add_argument("--apply", action="store_true", help="write into the client's config file")
    p.add_argument(
        "--no-env",
        dest="use_env",
        action="store_false",
        help=f"write the key itself instead of a reference to ${KEY_ENV}",
    )
    p.add_argument(
        "--hooks",
        action="store_true",
        help=f"also install the session-start hook ({', '.join(HOOK_CLIENTS)}) and, where the client has"
        f" them, the end-of-work hooks that save automatic checkpoints"
        f" ({', '.join(c for c, spec in HOOK_CLIENTS.items() if spec.end_events)}); implies --apply",
    )
    p.add_argument(
        "--hook-key",
        default=None,
        metavar="KEY",
        help="with --hooks: the hooks' own key (scopes read,checkpoint) for a server whose keys this "
        "machine cannot make; on the local server connect makes one itself",
    )
    p.set_defaults(func=_run_connect)


def _run_connect(args: argparse.Namespace) -> int:
    from sessionvault.local.host import target
    from sessionvault.local.setup import files, hook_keys, hooks

    state = target.state_folder()
    args.url = args.url or target.default_url(os.environ, state)
    require_safe_url(args.url)  # the config will send the key there
    if args.hooks and args.client not in hooks.HOOK_CLIENTS:
        # Refused before anything is written: no half-done change.
        print(
            f"sessionvault connect: {args.client} has no session-start hook, so --hooks cannot "
            f"be used with it (hooks exist for {', '.join(hooks.HOOK_CLIENTS)}); nothing was "
            f"written. Run `sessionvault connect {args.client} --apply` without --hooks.",
            file=sys.stderr,
        )
        return 2
    if args.hook_key and not args.hooks:
        print("sessionvault connect: --hook-key goes with --hooks; nothing was written.", file=sys.stderr)
        return 2
    found, source = (args.key, "--key") if args.key else target.default_key(os.environ, state, args.url)
    key = found or None
    spec = registry.CLIENTS[args.client]
    env_mode = args.use_env and spec.reads_env
    if env_mode and args.key:
        _where_the_key_goes(spec.title, args.key)
    elif env_mode and key and source != KEY_ENV:  # the deployed stack's saved key
        print(
            f"note: the config refers to ${KEY_ENV}; {spec.title} reads the key from its "
            f'environment: export {KEY_ENV}="$(cat {source})" in the shell profile it starts from',
            file=sys.stderr,
        )
    elif env_mode and not os.environ.get(KEY_ENV):
        print(
            f"note: set {KEY_ENV} where {spec.title} starts, it reads the key from there",
            file=sys.stderr,
        )
    home, cwd = Path.home(), Path.cwd()
    if not (args.apply or args.hooks):  # --hooks writes, so it implies --apply
        try:
            print(registry.render(args.client, args.url, key, use_env=args.use_env), end="")
            path = registry.config_path(args.client, home=home, cwd=cwd)
        except (ConfigFileError, OSError) as e:
            print(f"sessionvault connect: {e}", file=sys.stderr)
            return 2
        print(f"# goes into {path}", file=sys.stderr)
        return 0
    results: list[ApplyResult] = []
    try:
        with files.one_run(home=home):  # one backup per file, however many entries change in it
            results.append(files.apply(args.client, args.url, key, use_env=args.use_env, home=home, cwd=cwd))
            if args.hooks:
                results += hooks.install(args.client, home=home, cwd=cwd, url=args.url)
    except (ConfigFileError, OSError) as e:
        _report(results)  # what was written before the failure, and where its backups are
        print(f"sessionvault connect: {e}", file=sys.stderr)
        return 2
    _report(results)
    if args.hooks:  # the checkpoint hooks' own key: a model-facing key cannot save checkpoints
        try:
            done = hook_keys.ensure(state, args.url, key or "", given=args.hook_key or "")
        except ConfigError as e:
            print(f"sessionvault connect: {e}", file=sys.stderr)
            return 2
        print(f"note: {done}", file=sys.stderr)
    if args.hooks and hooks.HOOK_CLIENTS[args.client].unverified:  # as docs/clients.md and doctor
        print(
            f"note: {args.client}'s hooks are unverified: {hooks.HOOK_CLIENTS[args.client].unverified}",
            file=sys.stderr,
        )
    if spec.project_scoped:
        _approval_note(results[0].path.parent, home)
    if registry.holds_literal_key(spec, args.use_env):
        # A project file (Claude Code's .mcp.json) is one `git add .` away from a leak.
        where = " keep it out of git;" if spec.project_scoped else ""
        print(f"note:{where} {results[0].path} holds the API key in plain text (mode 0600)", file=sys.stderr)
    return 0


def _approval_note(folder: Path, home: Path) -> None:
    """Claude Code uses a project's .mcp.json server only once the user approves it there: say
    so, and how, unless it is approved already (approving is the user's decision: not made here)."""
    from sessionvault.local.setup import claude_code

    state = claude_code.approval(folder, home, claude_code.known(home))
    if state != "approved":
        why = (
            "you rejected it there before"
            if state == "rejected"
            else '`claude mcp list` says "Pending approval"'
        )
        print(
            f"note: Claude Code does not use this server until you approve it ({why}):\n"
            f"  {claude_code.what_to_do(folder, state)}",
            file=sys.stderr,
        )


def key_prefix(key: str) -> str:
    """What may be shown of a key: its first 12 characters, as `key list` and `doctor` do."""
    return key[:12]


def _where_the_key_goes(title: str, key: str) -> None:
    """Env-reference mode writes `$SESSIONVAULT_API_KEY`, not the key: say where the key goes."""
    if os.environ.get(KEY_ENV, "").strip() == key.strip():
        return  # this shell already exports it; the client started from here sees it
    profile, line = shell_profile.profile(), shell_profile.export_line(KEY_ENV, "<key>")
    shown = key_prefix(key)
    print(
        f"note: the config refers to ${KEY_ENV}; the --key you gave is NOT written into it.\n"
        f"  {title} reads the key from its environment: add this line to {profile} (the shell "
        f"profile {title} starts from), with your whole key:\n"
        f"    {line.replace('<key>', shown + '...')}\n"
        f"  ({shown}... is the start of the key you passed; or re-run with --no-env to write "
        f"the key itself into the config)",
        file=sys.stderr,
    )


def _report(results: list[ApplyResult]) -> None:
    """Each file once: whether it changed, then where its backup is (the state folder, never
    beside the file: a project's files are one `git add .` from a commit)."""
    changed: dict[Path, bool] = {}
    backups: dict[Path, Path] = {}
    for result in results:
        changed[result.path] = changed.get(result.path, False) or result.changed
        if result.backup is not None:
            backups.setdefault(result.path, result.backup)
    for path, did in changed.items():
        print(f"{'updated' if did else 'already up to date'}: {path}")
    for path, backup in backups.items():
        print(f"backup of {path} as it was: {backup}")


def add_bridge(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = subparsers.add_parser(
        "bridge",
        help="stdio MCP server that forwards to a remote SessionVault (for Claude Desktop)",
        description=BRIDGE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument("--url", default=None, help=f"the remote server's MCP endpoint (default: {URL_HELP})")
    sp.set_defaults(func=_run_bridge)


def _run_bridge(args: argparse.Namespace) -> int:
    from sessionvault.local import config
    from sessionvault.local.remote import bridge

    bridge.run(args.url or config.load().url, os.environ.get(KEY_ENV, "").strip())
    return 0


def add_doctor(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "doctor",
        help="check the server, the API key and the client configs",
        description="Check that the server answers, that SESSIONVAULT_API_KEY is accepted, and "
        "which clients are configured; print the command that fixes each problem. "
        "Exit code 0 when all is well, 1 otherwise.",
    )
    p.add_argument("--url", default=None, help=f"server URL (default: {SERVER_URL_HELP})")
    p.add_argument(
        "--project",
        default=None,
        metavar="DIR",
        help="check the project in DIR as if run there (its .mcp.json; default: the current folder;"
        " the projects Claude Code knows are checked anyway)",
    )
    p.set_defaults(func=_run_doctor)


def _run_doctor(args: argparse.Namespace) -> int:
    from sessionvault.local.setup import doctor

    project = Path(args.project).expanduser().absolute() if args.project else None
    if project is not None and not project.is_dir():
        print(f"sessionvault doctor: --project {args.project}: no such folder", file=sys.stderr)
        return 2
    return doctor.run(args.url, cwd=project)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_connect(sub)
    add_bridge(sub)
    add_doctor(sub)
