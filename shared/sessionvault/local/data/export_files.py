"""An export written where `sessionvault export` puts it: checked line by line as it streams
from the API (a stream cut short is an error, never a shorter export), then copied to stdout,
written to a file (0600, renamed when whole), or turned into a folder of Markdown files with
an index."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from sessionvault.errors import ConfigError, Unavailable
from sessionvault.local.data import readable as diff


def checked(lines: Iterator[bytes], format_name: str) -> Iterator[tuple[bytes, dict[str, Any]]]:
    """Each line with its JSON; the first must be the export header and the last its end line
    (`{"end": true, "sessions": N}`, N the sessions between): a stream cut short, even at a
    line boundary, is an error, never a shorter export."""
    sessions, ended = 0, False
    for number, raw in enumerate(lines, start=1):
        try:
            parsed = json.loads(raw)
        except ValueError:
            raise Unavailable(f"line {number} of the export is not JSON: export again") from None
        if number == 1 and (not isinstance(parsed, dict) or parsed.get("format") != format_name):
            raise ConfigError(f"the server's export is not {format_name}: is it a SessionVault server?")
        ended = isinstance(parsed, dict) and parsed.get("end") is True
        if ended and parsed.get("sessions") != sessions:
            raise Unavailable("the export's end line does not match what came before it: export again")
        sessions += number > 1 and not ended
        yield raw, parsed
    if not ended:
        raise Unavailable("the export stopped before its end line: export again")


def copy(lines: Iterable[tuple[bytes, dict[str, Any]]], sink: IO[bytes]) -> tuple[int, int]:
    sessions = versions = 0
    for raw, parsed in lines:
        sink.write(raw)
        if "versions" in parsed:  # a session line (not the header or the end line)
            sessions += 1
            versions += len(parsed.get("versions") or [])
    return sessions, versions


def to_file(path: Path, lines: Iterable[tuple[bytes, dict[str, Any]]]) -> tuple[int, int]:
    """Written aside (0600: an export is plaintext) and renamed when whole: a failed export
    never leaves a file that looks complete."""
    aside = path.with_name(f".{path.name}.{os.getpid()}.part")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            counts = copy(lines, f)
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
