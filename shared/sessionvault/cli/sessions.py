"""`sessionvault sessions list|show|search|history|diff|delete` and `sessionvault export`: your
sessions from a terminal, through the HTTP API (docs/api.md), against the local server or a
deployed one alike. The server and key are chosen as `connect` chooses them: --url, else
$SESSIONVAULT_URL, else the stack `sessionvault deploy` saved here, else the local server; --key,
else $SESSIONVAULT_API_KEY, else the deployment's saved key (for its own URL only).

Human output by default (tables, the session as text, a unified diff); --json prints the API's
JSON as it came, for scripts."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from sessionvault.errors import ConfigError, ValidationFailed
from sessionvault.local import api_client as client
from sessionvault.local import diff
from sessionvault.local.api_client import Api
from sessionvault.local.config import SERVER_URL_HELP
from sessionvault.names import KEY_ENV

LIST_PAGE = 100  # the API's largest page


# --------------------------------------------------------------------------- shared pieces


def connection_options() -> argparse.ArgumentParser:
    """--url, --key: the parent of every command here (and of `import`)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(
        "--url",
        default=None,
        help=f"the server (its /mcp URL; default: {SERVER_URL_HELP})",
    )
    p.add_argument(
        "--key", default=None, help=f"API key (default: ${KEY_ENV}, else the deployed stack's saved key)"
    )
    return p


def api_for(url: str | None, key: str | None) -> Api:
    """The API that --url/--key name, with `connect`'s precedence for what is not given."""
    from sessionvault.local import target

    state = target.state_folder()
    url = url or target.default_url(os.environ, state)
    found = key or target.default_key(os.environ, state, url)[0]
    return Api.at(url, found)


def confirm(what: str, expected: str, yes: bool) -> bool:
    """Irreversible, so confirmed: with --yes, or on a terminal by typing `expected`; refused
    (ConfigError) without a terminal. False when what was typed is not `expected`."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise ConfigError(f"not deleting {what} without confirmation: stdin is not a terminal; add --yes")
    print(
        f"This deletes {what}; it cannot be undone.\nTo confirm, type {expected!r}: ",
        end="",
        file=sys.stderr,
        flush=True,
    )
    if sys.stdin.readline().strip() != expected:
        print(f"not deleted: that is not {expected!r}", file=sys.stderr)
        return False
    return True


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def when(iso: str) -> str:
    """`2025-01-02T10:11:12+00:00` -> `2025-01-02 10:11` (a table's width)."""
    return iso[:16].replace("T", " ")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], widths: Sequence[int] = ()) -> str:
    """Left-aligned columns; a column of `widths` > 0 is cut to that width, the last column to
    what the terminal leaves."""
    cells = [
        [diff.one_line(v, w) for v, w in zip(row, [*widths, *[0] * len(headers)], strict=False)]
        for row in rows
    ]
    sizes = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    room = shutil.get_terminal_size((120, 24)).columns - sum(s + 2 for s in sizes[:-1])
    sizes[-1] = max(min(sizes[-1], room), 10)
    lines = []
    for row in [list(headers), *cells]:
        row[-1] = diff.one_line(row[-1], sizes[-1])
        lines.append("  ".join(c.ljust(s) for c, s in zip(row, sizes, strict=True)).rstrip())
    return "\n".join(lines)


def _note(entry: client.Listing) -> str:
    notes = []
    if "handoff" in entry:
        notes.append(f"handoff {entry['handoff']['state']}")
    if entry.get("unverified"):
        notes.append("unverified")
    return ", ".join(notes)


# --------------------------------------------------------------------------- sessions ...


def cmd_list(args: argparse.Namespace) -> int:
    api = api_for(args.url, args.key)
    shown: list[client.Listing] = []
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
        (f"{r['score']:.2f}", r["name"], r["version"], when(r["saved_at"]), r["repo"], r["summary"])
        for r in found["results"]
    ]
    print(table(("SCORE", "NAME", "VER", "SAVED", "REPO", "SUMMARY"), rows, (0, 48, 0, 0, 40)))
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
    from sessionvault.core.portability import FORMAT

    markdown = args.format == "markdown" or (args.format is None and args.dir is not None)
    if markdown and args.dir is None:
        raise ConfigError("--format markdown writes a folder: give it with --dir DIR")
    if markdown and args.out is not None:
        raise ConfigError("--out is for NDJSON; Markdown goes to a folder (--dir)")
    if not markdown and args.dir is not None:
        raise ConfigError("--dir is for --format markdown; NDJSON goes to --out FILE (or stdout)")
    api = api_for(args.url, args.key)
    lines = _checked(client.export(api), FORMAT)
    if markdown:
        sessions, versions = write_markdown(Path(args.dir), lines)
        where = str(args.dir)
    elif args.out in (None, "-"):
        try:
            sessions, versions = _copy(lines, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        where = "stdout"
    else:
        sessions, versions = _to_file(Path(args.out), lines)
        where = str(args.out)
    print(
        f"exported {sessions} session(s), {versions} version(s) to {where} (plaintext: keep it as"
        " you keep the sessions)",
        file=sys.stderr,
    )
    return 0


def _checked(lines: Iterator[bytes], format_name: str) -> Iterator[tuple[bytes, dict[str, Any]]]:
    """Each line with its JSON; the first must be the export header and the last its end line
    (`{"end": true, "sessions": N}`, N the sessions between): a stream cut short, even at a
    line boundary, is an error, never a shorter export."""
    sessions, ended = 0, False
    for number, raw in enumerate(lines, start=1):
        try:
            parsed = json.loads(raw)
        except ValueError:
            raise client.Unavailable(f"line {number} of the export is not JSON: export again") from None
        if number == 1 and (not isinstance(parsed, dict) or parsed.get("format") != format_name):
            raise ConfigError(f"the server's export is not {format_name}: is it a SessionVault server?")
        ended = isinstance(parsed, dict) and parsed.get("end") is True
        if ended and parsed.get("sessions") != sessions:
            raise client.Unavailable("the export's end line does not match what came before it: export again")
        sessions += number > 1 and not ended
        yield raw, parsed
    if not ended:
        raise client.Unavailable("the export stopped before its end line: export again")


def _copy(lines: Iterable[tuple[bytes, dict[str, Any]]], sink: IO[bytes]) -> tuple[int, int]:
    sessions = versions = 0
    for raw, parsed in lines:
        sink.write(raw)
        if "versions" in parsed:  # a session line (not the header or the end line)
            sessions += 1
            versions += len(parsed.get("versions") or [])
    return sessions, versions


def _to_file(path: Path, lines: Iterable[tuple[bytes, dict[str, Any]]]) -> tuple[int, int]:
    """Written aside (0600: an export is plaintext) and renamed when whole: a failed export
    never leaves a file that looks complete."""
    aside = path.with_name(f".{path.name}.{os.getpid()}.part")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            counts = _copy(lines, f)
        os.replace(aside, path)
    except BaseException:
        aside.unlink(missing_ok=True)
        raise
    return counts


INDEX = "index.md"


def markdown_file(name: str, used: set[str]) -> str:
    """A session's file name in the Markdown folder: the name itself when it is a plain file
    name, else a readable spelling of it with a short hash of the name (names may hold slashes
    and anything else); never one already `used` (compared without case, as macOS does)."""
    stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in name).lstrip(".")[:100] or "_"
    file = f"{stem}.md"
    if stem != name or file.lower() in used:
        file = f"{stem}-{hashlib.sha256(name.encode()).hexdigest()[:8]}.md"
    n = 2
    while file.lower() in used:
        file = f"{stem}-{hashlib.sha256(name.encode()).hexdigest()[:8]}-{n}.md"
        n += 1
    used.add(file.lower())
    return file


def write_markdown(folder: Path, lines: Iterable[tuple[bytes, dict[str, Any]]]) -> tuple[int, int]:
    """One Markdown file per session (every kept version in it, newest first) and an index,
    into an empty or new folder (0700, files 0600): one session in memory at a time."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ConfigError(f"{folder} is not an empty folder: give a new or empty one")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    used, index = {INDEX}, []
    versions = 0
    for _, session in lines:
        if "versions" not in session:  # the header, or the end line
            continue
        file = markdown_file(str(session.get("name", "")), used)
        _write_new(folder / file, diff.markdown(session))
        kept = session.get("versions") or []
        versions += len(kept)
        last = kept[-1].get("saved_at", "") if kept else ""
        index.append((str(session.get("name", "")), file, str(session.get("repo", "")), len(kept), last))
    page = [
        "# SessionVault export",
        "",
        "| Session | Repository | Versions | Last saved |",
        "| --- | --- | --- | --- |",
    ]
    for name, file, repo, count, last in index:
        cell = diff.one_line(name).replace("|", "\\|")
        page.append(f"| [{cell}]({file}) | {diff.one_line(repo)} | {count} | {diff.one_line(last)} |")
    _write_new(folder / INDEX, "\n".join(page) + "\n")
    return len(index), versions


def _write_new(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


# --------------------------------------------------------------------------- parsers


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common = connection_options()
    common.add_argument("--json", action="store_true", help="print the API's JSON (for scripts)")
    group = sub.add_parser(
        "sessions",
        help="list, read, search, compare and delete your sessions",
        description=__doc__,
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
    p.add_argument("name")
    p.add_argument("--version", type=_positive, default=0, help="an earlier version (default: the latest)")

    p = command("search", cmd_search, "sessions by meaning (needs embeddings on the server)")
    p.add_argument("query")
    p.add_argument("--repo", default="", help="only this repository")
    p.add_argument("--limit", type=_positive, default=5, help="at most this many (1-20; default: 5)")

    p = command("history", cmd_history, "every kept version of a session, newest first")
    p.add_argument("name")

    p = command("diff", cmd_diff, "what changed between two versions (default: the latest two)")
    p.add_argument("name")
    p.add_argument("v1", nargs="?", type=_positive, default=None, help="the older version")
    p.add_argument("v2", nargs="?", type=_positive, default=None, help="the newer one (default: the latest)")

    p = command("delete", cmd_delete, "delete a session with its history (the key needs the delete scope)")
    p.add_argument("name")
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
    e.set_defaults(func=cmd_export)


def _positive(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"not a whole number above 0: {raw!r}")
    return int(raw)
