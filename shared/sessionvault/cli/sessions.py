"""`sessionvault sessions list|show|search|history|diff|delete` and `sessionvault export`: your
sessions from a terminal, through the HTTP API (docs/api.md), against the local server or a
deployed one alike. The server and key are chosen as `connect` chooses them: --url, else
$SESSIONVAULT_URL, else the stack `sessionvault deploy` saved here, else the local server; --key,
else $SESSIONVAULT_API_KEY, else the deployment's saved key (for its own URL only).

Human output by default (tables, the session as text, a unified diff); --json prints the API's
JSON as it came, for scripts."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from sessionvault.cli.connection import api_for, connection_options
from sessionvault.cli.terminal import confirm, print_json, table, when
from sessionvault.errors import ConfigError, ValidationFailed
from sessionvault.local.data import export_files
from sessionvault.local.data import readable as diff
from sessionvault.local.remote import api_client as client
from sessionvault.local.remote.api_types import Listing

LIST_PAGE = 100  # the API's largest page

DESCRIPTION = """\
Your sessions from a terminal, on the local server or a deployed one alike.

The server is --url, else $SESSIONVAULT_URL, else the stack `sessionvault deploy` saved here,
else the local server; the key is --key, else $SESSIONVAULT_API_KEY, else the deployment's
saved key (for its own URL only): the same choice `connect` makes.

Tables and readable text by default; --json prints the server's JSON as it came, for scripts."""
NAME_HELP = "the session's name (as `sessions list` shows it)"


# --------------------------------------------------------------------------- shared pieces


def _note(entry: Listing) -> str:
    notes = []
    if "handoff" in entry:
        notes.append(diff.offer_note(entry["handoff"]))  # which version: maybe not the listed one
    if entry.get("unverified"):
        notes.append("unverified")
    return ", ".join(notes)


# --------------------------------------------------------------------------- sessions ...


def cmd_list(args: argparse.Namespace) -> int:
    api = api_for(args.url, args.key)
    shown: list[Listing] = []
    cursor, more = "", ""
    while True:
        want = LIST_PAGE if args.all else min(LIST_PAGE, args.limit - len(shown))
        page = client.list_sessions(api, repo=args.repo, limit=want, cursor=cursor)
        shown += page["sessions"]
        more = page.get("next_cursor") or ""
        if not more or (not args.all and len(shown) >= args.limit):
            break
        cursor = more
    if args.json:
        print_json({"sessions": shown, "next_cursor": more or None})
        return 0
    if not shown:
        print("no sessions" + (f" for {args.repo}" if args.repo else ""), file=sys.stderr)
        return 0
    rows = [
        (when(s["updated_at"]), s["version"], s["client"], s["name"], s["repo"], _note(s), s["preview"])
        for s in shown
    ]
    print(table(("UPDATED", "VER", "CLIENT", "NAME", "REPO", "NOTE", "PREVIEW"), rows, (0, 0, 16, 48, 40)))
    if more:
        print(f"(more: --limit {len(shown) + LIST_PAGE}, or --all)", file=sys.stderr)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    session = client.get_session(api_for(args.url, args.key), args.name, version=args.version)
    if args.json:
        print_json(session)
    else:
        sys.stdout.write(diff.session_text(session))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    found = client.search(api_for(args.url, args.key), args.query, repo=args.repo, limit=args.limit)
    if args.json:
        print_json(found)
        return 0
    if not found["results"]:
        print("nothing found", file=sys.stderr)
        return 0
    rows = [
        (f"{r['score']:.2f}" if "score" in r else "-", r.get("matched", ""), r["name"], r["version"],
         when(r["saved_at"]), r["repo"], r["summary"])
        for r in found["results"]
    ]  # fmt: skip
    print(table(("SCORE", "MATCHED", "NAME", "VER", "SAVED", "REPO", "SUMMARY"), rows, (0, 0, 48, 0, 0, 40)))
    if found.get("notice"):
        print(found["notice"], file=sys.stderr)
    if found.get("omitted"):
        print(f"({found['omitted']} more left out: --limit)", file=sys.stderr)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    kept = client.session_versions(api_for(args.url, args.key), args.name)
    if args.json:
        print_json(kept)
        return 0
    rows = []
    for v in reversed(kept["versions"]):
        r = v["record"]
        rows.append(
            (
                v["version"],
                when(v["saved_at"]),
                r.get("client", ""),
                r.get("branch", ""),
                str(r.get("commit", ""))[:10],
                v["handoff"]["state"] if "handoff" in v else "",
                r.get("summary", ""),
            )
        )
    print(table(("VER", "SAVED", "CLIENT", "BRANCH", "COMMIT", "HANDOFF", "SUMMARY"), rows, (0, 0, 16, 24)))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    kept = client.session_versions(api_for(args.url, args.key), args.name)
    versions = {v["version"]: v for v in kept["versions"]}
    numbers = sorted(versions)
    if len(numbers) < 2 and args.v1 is None:
        raise ValidationFailed(f"session {args.name!r} has only version {numbers[0]}: nothing to compare")
    old_n = args.v1 if args.v1 is not None else numbers[-2]
    new_n = args.v2 if args.v2 is not None else numbers[-1]
    for n in (old_n, new_n):
        if n not in versions:
            listed = ", ".join(map(str, numbers))
            raise ValidationFailed(f"session {args.name!r} has no version {n}; it keeps versions {listed}")
    old, new = versions[old_n], versions[new_n]
    lines = diff.unified(args.name, old, new)
    if args.json:
        print_json({"name": kept["name"], "from": old, "to": new, "diff": lines})
        return 0
    if not lines:
        print(f"versions {old_n} and {new_n} of {args.name} hold the same content", file=sys.stderr)
        return 0
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for line in diff.coloured(lines) if colour else lines:
        print(line)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    api = api_for(args.url, args.key)
    if not confirm(f"session {args.name!r} with every kept version", args.name, args.yes):
        return 1
    done = client.delete_session(api, args.name)
    if args.json:
        print_json(done)
    else:
        print(f"deleted {done['name']} ({done['versions_deleted']} version(s))")
    return 0


# --------------------------------------------------------------------------- export


def cmd_export(args: argparse.Namespace) -> int:
    from sessionvault.service.portability import FORMAT

    markdown = args.format == "markdown" or (args.format is None and args.dir is not None)
    if markdown and args.dir is None:
        raise ConfigError("--format markdown writes a folder: give it with --dir DIR")
    if markdown and args.out is not None:
        raise ConfigError("--out is for NDJSON; Markdown goes to a folder (--dir)")
    if not markdown and args.dir is not None:
        raise ConfigError("--dir is for --format markdown; NDJSON goes to --out FILE (or stdout)")
    api = api_for(args.url, args.key)
    lines = export_files.checked(client.export(api, args.workspace), FORMAT)
    if markdown:
        sessions, versions = export_files.write_markdown(Path(args.dir), lines)
        where = str(args.dir)
    elif args.out in (None, "-"):
        try:
            sessions, versions = export_files.copy(lines, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        where = "stdout"
    else:
        sessions, versions = export_files.to_file(Path(args.out), lines)
        where = str(args.out)
    print(
        f"exported {sessions} session(s), {versions} version(s) to {where} (plaintext: keep it as"
        " you keep the sessions)",
        file=sys.stderr,
    )
    return 0


# --------------------------------------------------------------------------- parsers


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common = connection_options()
    common.add_argument("--json", action="store_true", help="print the API's JSON (for scripts)")
    group = sub.add_parser(
        "sessions",
        help="list, read, search, compare and delete your sessions",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    ).add_subparsers(dest="action", required=True)

    def command(name: str, fn: Callable[[argparse.Namespace], int], what: str) -> argparse.ArgumentParser:
        p = group.add_parser(name, help=what, description=what, parents=[common])
        p.set_defaults(func=fn)
        return p

    p = command("list", cmd_list, "the newest sessions (a table)")
    p.add_argument("--repo", default="", help="only this repository (any spelling of it)")
    p.add_argument("--limit", type=_positive, default=20, help="at most this many (default: 20)")
    p.add_argument("--all", action="store_true", help="every session, page after page")

    p = command("show", cmd_show, "one session as readable text")
    p.add_argument("name", help=NAME_HELP)
    p.add_argument("--version", type=_positive, default=0, help="an earlier version (default: the latest)")

    p = command("search", cmd_search, "sessions by meaning (needs embeddings on the server)")
    p.add_argument("query", help="what you are looking for, in your own words")
    p.add_argument("--repo", default="", help="only this repository")
    p.add_argument("--limit", type=_positive, default=5, help="at most this many (1-20; default: 5)")

    p = command("history", cmd_history, "every kept version of a session, newest first")
    p.add_argument("name", help=NAME_HELP)

    p = command("diff", cmd_diff, "what changed between two versions (default: the latest two)")
    p.add_argument("name", help=NAME_HELP)
    p.add_argument("v1", nargs="?", type=_positive, default=None, help="the older version")
    p.add_argument("v2", nargs="?", type=_positive, default=None, help="the newer one (default: the latest)")

    p = command("delete", cmd_delete, "delete a session with its history (the key needs the delete scope)")
    p.add_argument("name", help=NAME_HELP)
    p.add_argument(
        "--yes", action="store_true", help="do not ask to type the name (needed when stdin is not a terminal)"
    )

    e = sub.add_parser(
        "export",
        help="every session with every kept version, as NDJSON or a folder of Markdown files",
        description="Export everything the key may read (every kept version, handoff states, "
        "timestamps) from the server (--url: local, or a deployment). NDJSON goes to --out "
        "(default: stdout) and is what `sessionvault import ndjson` takes: `sessionvault export "
        "--url A | sessionvault import ndjson - --url B` moves every session from A to B "
        "(docs/export.md). The export is plaintext.",
        parents=[connection_options()],
    )
    e.add_argument(
        "--out", default=None, metavar="FILE", help="NDJSON into FILE (0600), or - for stdout (the default)"
    )
    e.add_argument(
        "--format", choices=("ndjson", "markdown"), default=None, help="default: ndjson (markdown with --dir)"
    )
    e.add_argument(
        "--dir", default=None, metavar="DIR", help="Markdown: one file per session, and index.md, in DIR"
    )
    e.add_argument(
        "--workspace",
        default="",
        metavar="NAME",
        help="a workspace you belong to (default: your own sessions)",
    )
    e.set_defaults(func=cmd_export)


def _positive(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"not a whole number above 0: {raw!r}")
    return int(raw)
