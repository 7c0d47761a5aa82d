"""A small typed client of the HTTP API (`/api/v1`, docs/api.md) for the laptop side: the
`sessions`, `export` and `import` commands. One function per call, with the standard library
only (as `rpc.py`: no httpx on a command's start).

`rpc.request` reads at most 1 MB of an answer and cannot stream, while one session (1 MB of
record, JSON-escaped) or its version list may be larger and an export is a stream of any
length; so the calls here open the connection themselves, with `rpc.require_safe_url`'s rule:
the key goes over https, or plain http to this machine only.

Every refusal is raised as the project's own error (errors.py) with the server's message:
400/404 `ValidationFailed`, 403 `ScopeMissing`, 409 `QuotaExceeded`, a 503 for the embedding
provider `ProviderUnavailable`, a 401 `ConfigError` (the key is this machine's configuration),
429 `RateLimited` and what cannot be reached or answered `UpstreamError`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.client import HTTPConnection, HTTPException, HTTPResponse, HTTPSConnection
from typing import Any, Literal, NotRequired, TypedDict, cast
from urllib.parse import urlencode, urlsplit

from sessionvault import __version__
from sessionvault.errors import (
    ConfigError,
    ProviderUnavailable,
    QuotaExceeded,
    RateLimited,
    ScopeMissing,
    SessionVaultError,
    Unavailable,
    UpstreamError,
    ValidationFailed,
)
from sessionvault.local.remote.rpc import LOOPBACK, require_safe_url
from sessionvault.names import KEY_ENV

PREFIX = "/api/v1"
NDJSON = "application/x-ndjson"
TIMEOUT_S = 30.0  # each socket operation of a call
IMPORT_TIMEOUT_S = 120.0  # an import batch: every version in it is embedded and saved
MAX_ANSWER = 64_000_000  # a JSON answer: a session's versions may hold 1 MB each
MAX_LINE = 256_000_000  # one line of an export: a session with every kept version


# --------------------------------------------------------------------------- answers, typed


class Handoff(TypedDict):
    state: Literal["open", "accepted", "expired", "superseded"]
    version: int
    to_client: NotRequired[str]
    accepted_by: NotRequired[str]
    accepted_with: NotRequired[str]
    accepted_at: NotRequired[str]
    expires_at: NotRequired[str]
    expired_at: NotRequired[str]
    hint: NotRequired[str]


class Listing(TypedDict):
    name: str
    repo: str
    preview: str
    version: int
    client: str
    updated_at: str
    unverified: NotRequired[bool]
    automatic: NotRequired[bool]
    handoff: NotRequired[Handoff]


class SessionList(TypedDict):
    sessions: list[Listing]
    next_cursor: str | None


class Decision(TypedDict):
    decision: str
    reason: str


class Session(TypedDict):
    found: bool
    name: str
    repo: str
    version: int
    latest_version: int
    saved_at: str
    client: str
    notice: NotRequired[str]
    branch: NotRequired[str]
    commit: NotRequired[str]
    automatic: NotRequired[bool]
    versions: NotRequired[list[int]]
    summary: NotRequired[str]
    plan: NotRequired[list[str]]
    decisions: NotRequired[list[Decision]]
    todos: NotRequired[list[str]]
    files: NotRequired[list[str]]
    errors: NotRequired[list[str]]
    tried: NotRequired[list[str]]
    handoff: NotRequired[Handoff]


class ExportVersion(TypedDict):
    version: int
    saved_at: str
    record: dict[str, Any]  # the session as save_session takes it
    handoff: NotRequired[Handoff]


class ExportSession(TypedDict):
    name: str
    repo: str
    versions: list[ExportVersion]


class Deleted(TypedDict):
    deleted: bool
    name: str
    versions_deleted: int


class SearchHit(TypedDict):
    name: str
    repo: str
    score: float
    version: int
    saved_at: str
    summary: str


class SearchResults(TypedDict):
    results: list[SearchHit]
    omitted: NotRequired[int]
    estimated_tokens: NotRequired[int]
    notice: NotRequired[str]


class Offer(Handoff):
    name: str
    repo: str
    offered_at: str


class HandoffList(TypedDict):
    handoffs: list[Offer]


class ImportResult(TypedDict):
    sessions: int
    versions_added: int
    versions_already_there: int
    problems: list[str]


# --------------------------------------------------------------------------- errors


# --------------------------------------------------------------------------- the client


@dataclass(frozen=True)
class Api:
    """Where the API is (`root`: scheme, host, port and the path before /api/v1) and the key."""

    root: str
    key: str = field(repr=False)

    @classmethod
    def at(cls, url: str, key: str) -> Api:
        """The API of the server whose MCP URL (or bare base URL) is `url`."""
        if not key.strip():
            raise ConfigError(f"no API key: give --key, or set {KEY_ENV} (see `sessionvault doctor`)")
        return cls(api_root(url), key.strip())

    @property
    def local(self) -> bool:
        return urlsplit(self.root).hostname in LOOPBACK


def api_root(url: str) -> str:
    """`http://127.0.0.1:8765/mcp` -> `http://127.0.0.1:8765`: the /mcp URL every command takes
    (and `connect` writes) names the server; /api/v1 is beside it. A base URL, or one that
    already ends in /api/v1, is taken as well."""
    require_safe_url(url)
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    for suffix in ("/mcp", PREFIX):
        path = path.removesuffix(suffix)
    return f"{parts.scheme}://{parts.netloc}{path}"


def list_sessions(api: Api, *, repo: str = "", limit: int = 20, cursor: str = "") -> SessionList:
    """GET /sessions: the newest sessions (at most 100 a page; `next_cursor` for the next)."""
    return cast(SessionList, _json(api, "GET", "/sessions", {"repo": repo, "limit": limit, "cursor": cursor}))


def get_session(api: Api, name: str, *, version: int = 0, mode: str = "normal") -> Session:
    """GET /session: the session named `name` (its latest version, or `version`)."""
    return cast(Session, _json(api, "GET", "/session", {"name": name, "version": version, "mode": mode}))


def session_versions(api: Api, name: str) -> ExportSession:
    """GET /session/versions: every kept version, oldest first, each with its handoff state."""
    return cast(ExportSession, _json(api, "GET", "/session/versions", {"name": name}))


def delete_session(api: Api, name: str) -> Deleted:
    """DELETE /session: the session and its history (the key needs the delete scope)."""
    return cast(Deleted, _json(api, "DELETE", "/session", {"name": name}))


def search(api: Api, query: str, *, repo: str = "", limit: int = 5) -> SearchResults:
    """GET /search: sessions by meaning (a 503, ProviderUnavailable, without embeddings)."""
    return cast(SearchResults, _json(api, "GET", "/search", {"q": query, "repo": repo, "limit": limit}))


def list_handoffs(api: Api, *, repo: str = "", state: str = "", limit: int = 50) -> HandoffList:
    """GET /handoffs: offers, newest first, with their state."""
    return cast(HandoffList, _json(api, "GET", "/handoffs", {"repo": repo, "state": state, "limit": limit}))


def export(api: Api) -> Iterator[bytes]:
    """GET /export: the NDJSON export, line by line as it streams in (each line ends in
    b"\\n"); the connection is closed when the iterator is."""
    conn, response = _open(api, "GET", "/export", {}, timeout=TIMEOUT_S)
    try:
        if response.status != 200:
            raise _failure(api, response.status, _read(response), response)
        while line := _readline(api, response):
            if not line.endswith(b"\n"):  # every line the server sends ends in one
                raise Unavailable(f"the export from {api.root} was cut off mid-line: export again")
            yield line
    finally:
        conn.close()


def import_export(api: Api, body: bytes, *, dry_run: bool = False) -> ImportResult:
    """POST /import: an export document (its header line first); idempotent. `dry_run`: what
    it would add, saving nothing."""
    query = {"dry_run": 1} if dry_run else {}
    out = _json(api, "POST", "/import", query, body=body, content_type=NDJSON, timeout=IMPORT_TIMEOUT_S)
    return cast(ImportResult, out)


# --------------------------------------------------------------------------- a batched import


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

    def as_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "versions_added": self.versions_added,
            "versions_already_there": self.versions_already_there,
            "problems": self.problems,
            "lines_done": self.lines_done,
            "stopped": self.stopped,
        }


BATCH_BYTES = 4_000_000  # below a Lambda's 6 MB request payload
BATCH_VERSIONS = (10, 25, 1000)  # the fewest, the first, the most versions a batch holds
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
    sleep: Callable[[float], None] = time.sleep,
    waiting: Callable[[str], None] = lambda _message: None,
) -> ImportTotals:
    """POST an export read line by line in batches (memory: one batch, whatever the input's
    size), each with the input's header line first. Import is idempotent, so a batch that
    failed on the way (a 429, a 503, a dropped connection) is simply sent again, and an import
    that stopped can be run again as it was: nothing is added twice.

    A line that is not JSON stops the import there: the lines before it are imported, nothing
    from it on. `format_name` is the header's expected `format`. Batches grow or shrink to take
    about BATCH_TARGET_S each (a local server takes hundreds of versions at once, a Lambda
    with a remote embedding provider a few dozen)."""
    done = ImportTotals()
    numbered = ((n, raw) for n, raw in enumerate(lines, start=1) if raw.strip())
    first = next(numbered, None)
    header = _header(first, format_name)
    done.lines_done = 1
    batch: list[tuple[int, bytes]] = []
    size, versions, most = 0, 0, BATCH_VERSIONS[1]
    for number, raw in numbered:
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError):
            if batch and not _send(api, header, batch, dry_run, done, sleep, waiting):
                return done
            done.stopped = (
                f"line {number} is not JSON (a truncated or corrupted file?): imported the lines"
                f" before it, nothing from line {number} on"
            )
            return done
        count = (
            len(parsed["versions"])
            if isinstance(parsed, dict) and isinstance(parsed.get("versions"), list)
            else 0
        )
        if batch and (size + len(raw) > BATCH_BYTES or versions + count > most):
            started = time.monotonic()
            if not _send(api, header, batch, dry_run, done, sleep, waiting):
                return done
            most = _next_size(most, versions, time.monotonic() - started)
            batch, size, versions = [], 0, 0
        batch.append((number, raw.rstrip(b"\r\n")))
        size, versions = size + len(raw), versions + count
    if batch:
        _send(api, header, batch, dry_run, done, sleep, waiting)
    return done


SAVE_CONTROLS = ("handoff", "to_client")  # steer a save; not part of a record (records.py)


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
    api: Api,
    header: bytes,
    batch: list[tuple[int, bytes]],
    dry_run: bool,
    done: ImportTotals,
    sleep: Callable[[float], None],
    waiting: Callable[[str], None],
) -> bool:
    """POST one batch (again after a 429 or a 5xx: it is idempotent); False when it stopped."""
    body = b"\n".join([header, *(raw for _, raw in batch)]) + b"\n"
    span = f"lines {batch[0][0]}-{batch[-1][0]}"
    for attempt in range(RETRIES + 1):
        try:
            result = import_export(api, body, dry_run=dry_run)
            break
        except (RateLimited, Unavailable) as exc:
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


def _stopped_at(done: ImportTotals, span: str, exc: Exception) -> str:
    return (
        f"stopped at {span}: {exc}. Everything up to line {done.lines_done} is imported; some"
        f" sessions of {span} may be too. Running the same import again adds only what is missing"
    )


# --------------------------------------------------------------------------- HTTP


def _json(
    api: Api,
    method: str,
    path: str,
    query: dict[str, Any],
    *,
    body: bytes | None = None,
    content_type: str = "",
    timeout: float = TIMEOUT_S,
) -> dict[str, Any]:
    conn, response = _open(api, method, path, query, body=body, content_type=content_type, timeout=timeout)
    try:
        raw = _read(response)
    finally:
        conn.close()
    if response.status != 200:
        raise _failure(api, response.status, raw, response)
    try:
        out = json.loads(raw)
    except ValueError:
        out = None
    if not isinstance(out, dict):
        raise UpstreamError(f"{api.root} answered {path} with something that is not a JSON object")
    return out


def _open(
    api: Api,
    method: str,
    path: str,
    query: dict[str, Any],
    *,
    body: bytes | None = None,
    content_type: str = "",
    timeout: float,
) -> tuple[HTTPConnection, HTTPResponse]:
    parts = urlsplit(api.root)
    host = require_safe_url(api.root)
    conn_class = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    conn = conn_class(host, parts.port, timeout=timeout)
    sent = {k: str(v) for k, v in query.items() if v not in ("", 0, None)}
    target = f"{parts.path}{PREFIX}{path}" + (f"?{urlencode(sent)}" if sent else "")
    headers = {
        "Authorization": f"Bearer {api.key}",
        "Accept": "application/json, application/x-ndjson",
        "User-Agent": f"sessionvault-cli/{__version__}",
    }
    if content_type:
        headers["Content-Type"] = content_type
    try:
        conn.request(method, target, body=body, headers=headers)
        return conn, conn.getresponse()
    except (OSError, HTTPException) as exc:
        conn.close()
        raise _unreachable(api, exc) from None


def _read(response: HTTPResponse) -> bytes:
    try:
        raw = response.read(MAX_ANSWER + 1)
    except (OSError, HTTPException) as exc:
        raise Unavailable(f"the answer was cut off ({type(exc).__name__}): try again") from None
    if len(raw) > MAX_ANSWER:
        raise UpstreamError(f"the answer is larger than {MAX_ANSWER} bytes")
    return raw


def _readline(api: Api, response: HTTPResponse) -> bytes:
    try:
        line = response.readline(MAX_LINE + 1)
    except (OSError, HTTPException) as exc:
        raise Unavailable(
            f"the export from {api.root} was cut off ({type(exc).__name__}): nothing is lost on"
            " the server; export again"
        ) from None
    if len(line) > MAX_LINE:
        raise UpstreamError(f"an export line is larger than {MAX_LINE} bytes")
    return line


def _unreachable(api: Api, exc: BaseException) -> Unavailable:
    reason = str(exc) or type(exc).__name__
    hint = " (is the local server running? `sessionvault dev` starts it)" if api.local else ""
    return Unavailable(f"cannot reach {api.root}: {reason}{hint}")


def _failure(api: Api, status: int, raw: bytes, response: HTTPResponse) -> SessionVaultError:
    """The server's refusal as the project's error, with the server's own message."""
    code, message = _error_of(raw)
    message = message or f"HTTP {status}"
    retry = response.getheader("retry-after") or ""
    retry_after = int(retry) if retry.isdigit() else None
    if status == 401:
        return ConfigError(
            f"{api.root} refused the API key (401): give a key of this server with --key or {KEY_ENV}"
        )
    if status == 403 and code == "scope":
        return ScopeMissing(message)
    if status == 429:
        later = f" (try again in {retry_after} s)" if retry_after is not None else ""
        return RateLimited(f"{api.root} is rate limiting this key{later}", retry_after)
    if status == 409 or code == "quota":
        return QuotaExceeded(message)
    if code == "provider":
        return ProviderUnavailable(message)
    if status >= 500:
        return Unavailable(f"{api.root} answered HTTP {status}: {message}", retry_after)
    if status in (400, 404, 413):
        return ValidationFailed(message)
    return UpstreamError(f"{api.root} answered HTTP {status}: {message}")


def _error_of(raw: bytes) -> tuple[str, str]:
    """(code, message) of an error body: the API's `{"error": {"code", "message"}}`, the edge's
    `{"error": "message"}` or a JSON-RPC error; ("", "") for anything else."""
    try:
        body = json.loads(raw)
    except ValueError:
        return "", ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str):
        return "", error
    if isinstance(error, dict):
        return str(error.get("code", "")), str(error.get("message", ""))
    return "", ""
