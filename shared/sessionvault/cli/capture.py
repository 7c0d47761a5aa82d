"""`sessionvault capture on|off|status` (automatic checkpoints for the repo here) and
`sessionvault import SOURCE`: from a client id, the same checkpoint on demand from the client's
own session files (for a user who did not have the hook installed); from `ndjson`, a
SessionVault export; from an importer (sessionvault.local.data.importers), another tool's data.

The last two go through the HTTP API's idempotent /api/v1/import, not save_session: running
an import again adds no version whose content the session already keeps (save_session only
compares with the latest version), the server's dry run says what would be added, and one
request takes a batch of sessions."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sessionvault.errors import ConfigError
from sessionvault.local import config
from sessionvault.local.hook import hook_key
from sessionvault.local.hook.capture import switch
from sessionvault.local.hook.capture.clients import READERS
from sessionvault.local.hook.repo import current_repo
from sessionvault.local.remote.rpc import require_safe_url
from sessionvault.names import KEY_ENV

if TYPE_CHECKING:  # imported by the commands that send (http.client and the rest): not by --help
    from sessionvault.local.remote.batch_import import ImportTotals

IMPORTERS_MODULE = "sessionvault.local.data.importers"
# An importer: what PATH holds -> save_session arguments, oldest first per session name.
Importer = Callable[[Path], list[dict[str, Any]]]


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "capture",
        help="turn automatic checkpoints on or off for this repo, or show whether they are on",
        description="Automatic checkpoints (the end-of-work hooks `connect --hooks` installs) for the "
        f"repo of the current folder; ${switch.ENV}=off turns them off everywhere.",
    )
    p.add_argument(
        "state",
        choices=["on", "off", "status"],
        help="on or off for this repo (kept in the state folder), or status: whether they are on and why",
    )
    p.set_defaults(func=_run_capture)

    from sessionvault.cli.connection import connection_options

    i = subparsers.add_parser(
        "import",
        help="bring sessions in: a client's own session files, a SessionVault export, or another tool's data",
        description="SOURCE is one of:\n"
        f"  a client id ({', '.join(READERS)}): the checkpoint an end-of-work hook would have saved,\n"
        "    built from that client's native session files for the current folder (no model);\n"
        "  ndjson: a SessionVault export (`sessionvault export`), PATH a file or - for stdin;\n"
        "    idempotent: the same content adds no version (docs/export.md);\n"
        "  an importer's name (what PATH holds, from another tool: `sessionvault import list`\n"
        "    names them), imported the same idempotent way.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[connection_options()],
    )
    i.add_argument("source", metavar="SOURCE", help="a client id, ndjson, an importer's name, or list")
    i.add_argument("path", nargs="?", default=None, metavar="PATH", help="ndjson and importers: what to read")
    which = i.add_mutually_exclusive_group()
    which.add_argument("--session", default="", help="a client's session id (default: the newest here)")
    which.add_argument("--latest", action="store_true", help="a client's newest session here (the default)")
    i.add_argument(
        "--dry-run",
        action="store_true",
        help="save nothing: a client's checkpoint is printed; for ndjson and importers the server says"
        " what it would add",
    )
    i.add_argument("--json", action="store_true", help="ndjson and importers: print the result as JSON")
    i.add_argument(
        "--workspace",
        default="",
        metavar="NAME",
        help="ndjson and importers: into a workspace you may write to (default: your own sessions)",
    )
    i.set_defaults(func=_run_import)


def _run_capture(args: argparse.Namespace) -> int:
    cfg, repo = config.load(), current_repo()
    if args.state != "status":
        switch.set_repo(cfg.state, repo, on=args.state == "on")
    why = switch.disabled(cfg, repo)
    print(f"automatic checkpoints for {repo}: " + (f"off ({why})" if why else "on"))
    return 0


def _run_import(args: argparse.Namespace) -> int:
    if args.source in READERS:
        if args.path is not None or args.json:
            raise ConfigError(f"{args.source} reads the client's own files: it takes no PATH and no --json")
        return _import_client(args)
    if args.session or args.latest:
        raise ConfigError("--session and --latest are for a client id (" + ", ".join(READERS) + ")")
    if args.source == "list":
        print("\n".join(["ndjson", *sorted(_importers(args.source))]))
        return 0
    if args.source == "ndjson":
        return _import_ndjson(args)
    importers = _importers(args.source)
    if args.source not in importers:
        known = ", ".join([*READERS, "ndjson", *sorted(importers)])
        raise ConfigError(f"no source {args.source!r}: give one of {known}")
    return _import_with(args.source, importers[args.source], args)


def _import_client(args: argparse.Namespace) -> int:
    # The checkpoint's rules import pydantic (through core.records): only this command needs them.
    from sessionvault.local.hook.capture.hook import SEND_TIMEOUT_S, checkpoint_args
    from sessionvault.local.hook.capture.spool import Spool

    reader, cwd = READERS[args.source], Path.cwd()
    path = reader.locate(Path.home(), cwd, args.session)
    if path is None:
        which = f"session {args.session}" if args.session else "any session"
        raise ConfigError(
            f"no {args.source} {which} found for {cwd}; see docs/clients.md for where it keeps them"
        )
    checkpoint = checkpoint_args(reader, path, cwd, args.session)
    if checkpoint is None:
        raise ConfigError(f"{path} holds nothing to hand over yet (no request, no reply)")
    if args.dry_run:
        print(json.dumps(checkpoint, indent=2, ensure_ascii=False))
        return 0
    from sessionvault.local.host import target

    state = target.state_folder()
    url = args.url or target.default_url(os.environ, state)
    require_safe_url(url)
    # A checkpoint is the hooks' to save: their own key first (connect --hooks makes it).
    key = args.key or hook_key.saved(state, url) or target.default_key(os.environ, state, url)[0]
    if not key:
        raise ConfigError(f"no API key: give --key or set {KEY_ENV} (see `sessionvault doctor`)")
    spool = Spool(state)
    spool.put(checkpoint)
    _, left = spool.flush(url, key, SEND_TIMEOUT_S)
    if left:
        print(
            f"{checkpoint['name']}: not saved yet ({url} did not take it); it is spooled. A checkpoint"
            " needs a key with the checkpoint scope: `sessionvault connect <client> --hooks` gives"
            " this machine's hooks one",
            file=sys.stderr,
        )
        return 1
    print(
        f"saved {checkpoint['name']} ({len(checkpoint['files'])} files, {len(checkpoint['errors'])} errors)"
    )
    return 0


def _import_ndjson(args: argparse.Namespace) -> int:
    """A SessionVault export, from a file or stdin, POSTed to /api/v1/import in batches."""
    if args.path is None:
        raise ConfigError("ndjson needs PATH: the export file, or - to read it from stdin")
    if args.path == "-":
        if sys.stdin.isatty():
            raise ConfigError(
                "PATH is - but stdin is a terminal: pipe an export in (sessionvault export | ...)"
            )
        return _send(args, sys.stdin.buffer, "stdin")
    try:
        with open(args.path, "rb") as f:
            return _send(args, f, args.path)
    except OSError as exc:
        raise ConfigError(f"cannot read {args.path}: {exc.strerror or exc}") from None


def _importers(source: str) -> dict[str, Importer]:
    """sessionvault.local.data.importers.IMPORTERS, imported only when a command needs it (and
    perhaps not there: this installation may have none)."""
    try:
        module = importlib.import_module(IMPORTERS_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != IMPORTERS_MODULE:
            raise  # an importer's own dependency is missing: that is a bug to see
        module = None
    found = getattr(module, "IMPORTERS", None)
    if isinstance(found, dict):
        return cast(dict[str, Importer], dict(found))
    if source == "list":
        return {}
    known = ", ".join([*READERS, "ndjson"])
    raise ConfigError(
        f"no source {source!r}: this installation has no importers of other tools' data; give one of {known}"
    )


def _import_with(name: str, importer: Importer, args: argparse.Namespace) -> int:
    """Another tool's data: the importer's save_session arguments, with secrets scrubbed here
    as a hook's checkpoint is (so the server's own redaction changes nothing and the same data
    imported again matches what is stored), sent as an export: one idempotent /import per
    batch, a session's versions in the order the importer gave them."""
    from sessionvault.core.redact import scrub
    from sessionvault.local.remote import batch_import
    from sessionvault.service.portability import FORMAT

    if args.path is None:
        raise ConfigError(f"{name} needs PATH: what to read")
    path = Path(args.path).expanduser()
    if not path.exists():
        raise ConfigError(f"{path} does not exist")
    try:
        records = importer(path)
    except OSError as exc:
        raise ConfigError(f"{name} cannot read {path}: {exc.strerror or exc}") from None
    if not records:
        print(f"{name} found nothing to import in {path}", file=sys.stderr)
        return 0
    clean = [scrub(record)[0] for record in records]
    print(f"{name}: {len(clean)} record(s) from {path}", file=sys.stderr)
    return _send(args, batch_import.as_export(clean, FORMAT), str(path))


def _send(args: argparse.Namespace, lines: Iterable[bytes], where: str) -> int:
    from sessionvault.cli.connection import api_for
    from sessionvault.local.remote import batch_import
    from sessionvault.service.portability import FORMAT

    api = api_for(args.url, args.key)
    shown = Progress(where, on=sys.stderr.isatty())
    try:
        done = batch_import.import_lines(
            api,
            lines,
            format_name=FORMAT,
            dry_run=args.dry_run,
            workspace=args.workspace,
            waiting=shown.note,
            progress=shown.show,
        )
    finally:
        shown.clear()  # before any other line: the summary, or the error that stopped it
    if args.json:
        print(json.dumps({**done.as_dict(), "dry_run": args.dry_run}, indent=2, ensure_ascii=False))
    else:
        added = "would add" if args.dry_run else "added"
        print(
            f"{where}: {done.sessions} session(s), {done.versions_added} version(s) {added},"
            f" {done.versions_already_there} already there" + ("; nothing was saved" if args.dry_run else "")
        )
    for problem in done.problems:
        print(f"not imported: {problem}", file=sys.stderr)
    if done.stopped:
        print(f"sessionvault: {done.stopped}", file=sys.stderr)
    if done.incomplete:
        print(f"sessionvault: {where} is not a whole export: {done.incomplete}", file=sys.stderr)
    return 1 if done.problems or done.stopped or done.incomplete else 0


class Progress:
    """How far an import is, on one line of a terminal's stderr, rewritten before each batch
    (an import of hundreds of sessions takes minutes); off for a pipe or a file."""

    def __init__(self, where: str, *, on: bool) -> None:
        self.where, self.on, self.drawn = where, on, False

    def show(self, done: ImportTotals, line: int) -> None:
        if not self.on:
            return
        sent = f"{done.sessions} session(s), {done.versions_added} version(s) added so far"
        sys.stderr.write(f"\r\x1b[Kimporting {self.where}: {sent}; sending up to line {line} ...")
        sys.stderr.flush()
        self.drawn = True

    def note(self, message: str) -> None:
        """A line of its own (a wait after a 429), below which the progress goes on."""
        self.clear()
        print(message, file=sys.stderr, flush=True)

    def clear(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.drawn = False
