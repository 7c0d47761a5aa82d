"""An import in batches (`sessionvault import ndjson`): an export of any size sent as POSTs of
a bounded size, each retried on a 429 or a 5xx (an import is idempotent), sized to stay well
inside API Gateway's 29 s, with line numbers of the whole input in every problem reported.

An export ends with `{"end": true, "sessions": N}` so that a copy cut at a line boundary (a
full disk, an interrupted download) is told from a whole one: what such a copy holds is
imported, and the totals say it was incomplete (`ImportTotals.incomplete`)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sessionvault.errors import RateLimited, SessionVaultError, Unavailable, ValidationFailed
from sessionvault.local.remote.api_client import import_export
from sessionvault.local.remote.api_types import ImportResult
from sessionvault.local.remote.transport import Api


@dataclass
class ImportTotals:
    """What a batched import did, line numbers those of the whole input. `stopped`: why it
    ended before the last line (nothing from that line on was sent), else ""."""

    sessions: int = 0
    versions_added: int = 0
    versions_already_there: int = 0
    problems: list[str] = field(default_factory=list)
    lines_done: int = 0  # the last input line the server has taken (1: only the header)
    stopped: str = ""
    incomplete: str = ""  # the input read to its last line, but it is not a whole export

    def as_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "versions_added": self.versions_added,
            "versions_already_there": self.versions_already_there,
            "problems": self.problems,
            "lines_done": self.lines_done,
            "stopped": self.stopped,
            "incomplete": self.incomplete,
        }


BATCH_BYTES = 4_000_000  # below a Lambda's 6 MB request payload
BATCH_VERSIONS = (10, 25, 500)  # the fewest, the first, the most (= the server's cap: portability)
BATCH_TARGET_S = 8.0  # a batch's aim, well inside API Gateway's 29 s
MAX_WAIT_S = 60  # a longer Retry-After (the day's limit) stops the import instead
RETRIES = 5
_PROBLEM_LINE = re.compile(r"^line (\d+): ")


def import_lines(
    api: Api,
    lines: Iterable[bytes],
    *,
    format_name: str,
    dry_run: bool = False,
    workspace: str = "",
    sleep: Callable[[float], None] = time.sleep,
    waiting: Callable[[str], None] = lambda _message: None,
    progress: Callable[[ImportTotals, int], None] = lambda _done, _line: None,
) -> ImportTotals:
    """POST an export read line by line in batches (memory: one batch, whatever the input's
    size), each with the input's header line first. Import is idempotent, so a batch that
    failed on the way (a 429, a 503, a dropped connection) is simply sent again, and an import
    that stopped can be run again as it was: nothing is added twice.

    A line that is not JSON stops the import there: the lines before it are imported, nothing
    from it on. `format_name` is the header's expected `format`. Batches grow or shrink to take
    about BATCH_TARGET_S each (a local server takes hundreds of versions at once, a Lambda
    with a remote embedding provider a few dozen). `progress(done, line)` is called before
    each batch is sent (`line`: the batch's last), for a command to show how far it is.

    The last line must be the export's end line, whose count is that of the session lines
    before it; else the input is not a whole export (`incomplete` says so), though what it
    holds is imported."""
    done = ImportTotals()
    post = partial(import_export, api, dry_run=dry_run, workspace=workspace)  # one batch, sent
    numbered = ((n, raw) for n, raw in enumerate(lines, start=1) if raw.strip())
    first = next(numbered, None)
    header = _header(first, format_name)
    done.lines_done = 1
    batch: list[tuple[int, bytes]] = []
    size, versions, most = 0, 0, BATCH_VERSIONS[1]
    seen, end, ended_at = 0, None, 0  # session lines so far; the end line's count and line, while last
    for number, raw in numbered:
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError):
            if batch and not _send(post, header, batch, done, sleep, waiting, progress):
                return done
            done.stopped = (
                f"line {number} is not JSON (a truncated or corrupted file?): imported the lines"
                f" before it, nothing from line {number} on"
            )
            return done
        end = parsed.get("sessions", -1) if isinstance(parsed, dict) and parsed.get("end") is True else None
        if end is not None:
            ended_at = number
            continue  # the server would skip it too; what it says is checked at the end
        seen += 1
        count = (
            len(parsed["versions"])
            if isinstance(parsed, dict) and isinstance(parsed.get("versions"), list)
            else 0
        )
        if batch and (size + len(raw) > BATCH_BYTES or versions + count > most):
            started = time.monotonic()
            if not _send(post, header, batch, done, sleep, waiting, progress):
                return done
            most = _next_size(most, versions, time.monotonic() - started)
            batch, size, versions = [], 0, 0
        batch.append((number, raw.rstrip(b"\r\n")))
        size, versions = size + len(raw), versions + count
    if batch and not _send(post, header, batch, done, sleep, waiting, progress):
        return done
    done.incomplete = _incomplete(seen, end)
    if not done.incomplete:
        done.lines_done = ended_at  # the whole input, its end line included
    return done


def _incomplete(seen: int, end: object) -> str:
    """Why an input read to its last line is not a whole export, else ""."""
    held = f"it held {seen} session line(s), and they are imported"
    if end is None:
        return (
            'the input has no end line ({"end": true, "sessions": N}, an export\'s last): it was'
            f" cut short (a partial copy?), so sessions may be missing; {held}. Import the whole"
            " export again: nothing is added twice"
        )
    if end != seen:
        return (
            f"the export's end line says {end} session(s), but {held}: the file is not the export"
            " as it was written. Import the whole export again: nothing is added twice"
        )
    return ""


# Arguments that steer a save and are not part of a record (records.py SAVE_CONTROLS).
SAVE_CONTROLS = ("handoff", "to_client", "workspace", "to_person")


def as_export(records: Iterable[dict[str, Any]], format_name: str) -> Iterator[bytes]:
    """save_session arguments (what an importer makes) as an export document: the header, then
    one line per session name, its versions in the order given (so a later one stays newer).
    Offering a handoff is not part of a record: an import never offers one."""
    sessions: dict[str, list[dict[str, Any]]] = {}
    for args in records:
        name = args.get("name")
        if not isinstance(name, str):
            raise ValidationFailed("every record needs a name")
        record = {k: v for k, v in args.items() if k != "name" and k not in SAVE_CONTROLS}
        sessions.setdefault(name, []).append(record)
    yield json.dumps({"format": format_name}).encode() + b"\n"
    for name, kept in sessions.items():
        line = {
            "name": name,
            "repo": kept[-1].get("repo", ""),
            "versions": [{"version": n, "saved_at": "", "record": r} for n, r in enumerate(kept, start=1)],
        }
        yield json.dumps(line, ensure_ascii=False).encode() + b"\n"
    yield json.dumps({"end": True, "sessions": len(sessions)}).encode() + b"\n"


def _header(first: tuple[int, bytes] | None, format_name: str) -> bytes:
    wanted = f'the first line must be {{"format": "{format_name}"}}'
    if first is None:
        raise ValidationFailed(f"not a SessionVault export: the input is empty ({wanted})")
    try:
        header = json.loads(first[1])
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("format") != format_name:
        raise ValidationFailed(f"not a SessionVault export: {wanted}")
    return first[1].rstrip(b"\r\n")


def _next_size(most: int, versions: int, took_s: float) -> int:
    """How many versions the next batch may hold, from how long this one took."""
    low, _, high = BATCH_VERSIONS
    if versions == 0 or took_s <= 0:
        return most
    per_version = took_s / versions
    return max(low, min(high, int(BATCH_TARGET_S / per_version)))


def _send(
    post: Callable[[bytes], ImportResult],
    header: bytes,
    batch: list[tuple[int, bytes]],
    done: ImportTotals,
    sleep: Callable[[float], None],
    waiting: Callable[[str], None],
    progress: Callable[[ImportTotals, int], None],
) -> bool:
    """POST one batch (again after a 429 or a 5xx: it is idempotent); False when it stopped."""
    body = b"\n".join([header, *(raw for _, raw in batch)]) + b"\n"
    span = f"lines {batch[0][0]}-{batch[-1][0]}"
    progress(done, batch[-1][0])
    for attempt in range(RETRIES + 1):
        try:
            result = post(body)
            break
        except (RateLimited, Unavailable) as exc:
            limit = exc.per_minute if isinstance(exc, RateLimited) else None
            if limit is not None and _versions(batch) > limit + 1 and len(batch) > 1:
                # More than a minute's budget can ever take (the server charges an import by
                # the versions it carries, before the work): in halves, each paced on its own.
                half = len(batch) // 2
                return all(
                    _send(post, header, part, done, sleep, waiting, progress)
                    for part in (batch[:half], batch[half:])
                )
            wait = exc.retry_after if exc.retry_after is not None else 2**attempt
            if attempt == RETRIES or wait > MAX_WAIT_S:
                done.stopped = _stopped_at(done, span, exc)
                return False
            waiting(f"{exc}; trying {span} again in {wait} s")
            sleep(wait)
        except SessionVaultError as exc:
            done.stopped = _stopped_at(done, span, exc)
            return False
    done.sessions += result["sessions"]
    done.versions_added += result["versions_added"]
    done.versions_already_there += result["versions_already_there"]
    for problem in result["problems"]:
        # The server numbers the body's lines (2 = the batch's first session): the input's here.
        match = _PROBLEM_LINE.match(problem)
        index = int(match.group(1)) - 2 if match else -1
        if match and 0 <= index < len(batch):
            problem = f"line {batch[index][0]}: {problem[match.end() :]}"
        done.problems.append(problem)
    done.lines_done = batch[-1][0]
    return True


def _versions(batch: list[tuple[int, bytes]]) -> int:
    """How many versions a batch's session lines carry (what the server charges it)."""
    count = 0
    for _, raw in batch:
        try:
            versions = json.loads(raw).get("versions")
        except (ValueError, RecursionError, AttributeError):
            continue
        count += len(versions) if isinstance(versions, list) else 0
    return count


def _stopped_at(done: ImportTotals, span: str, exc: Exception) -> str:
    return (
        f"stopped at {span}: {exc}. Everything up to line {done.lines_done} is imported; some"
        f" sessions of {span} may be too. Running the same import again adds only what is missing"
    )
