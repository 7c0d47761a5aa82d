"""OpenCode's own record of one session, read into a `Transcript` without any model.

Where it is. OpenCode 1.x keeps every session of every project in one SQLite database,
`opencode.db`, in its data folder: `$XDG_DATA_HOME/opencode/`, else `~/.local/share/opencode/`
(the same on macOS: OpenCode uses the XDG rule everywhere). `OPENCODE_DB` overrides the file: an
absolute path as is, a relative one inside the data folder. Builds of a development channel
name the file `opencode-<channel>.db`; the npm release ("latest") uses `opencode.db`.
Documented at https://opencode.ai/v1/docs/troubleshooting/ ("Storage": "opencode.db - SQLite
database containing projects, sessions, and messages ... Run `opencode db path` to find the
active database. Custom OPENCODE_DB settings and development channels can use a different
filename"); `opencode db path` of 1.18.33 prints exactly this rule's answer. Before the
database (0.x), sessions were JSON files under `storage/`; this reader does not read those.

What is in it (OpenCode 1.18.33, checked on a real run: tests/fixtures/transcripts/
opencode-1.18.33/): `session` (id, directory = the folder OpenCode ran in, parent_id for a
subagent's session, time_updated), `message` (one row per message; `data` JSON with `role`, and
`summary: true` on a compaction summary), `part` (one row per part of a message; `data` JSON with
`type`: "text" (`text`, `synthetic`), "tool" (`tool`, `state`: {status, input, output,
metadata, error}), "step-start", "step-finish", "patch", "compaction"...) and `todo` (the
session's task list as it last stood: content, status, position).

The tools whose calls matter here: `todowrite` (`todos: [{content, status, priority}]`),
`write` / `edit` / `multiedit` (`filePath`, absolute), `apply_patch` (`patchText`, whose
`*** Add File:` / `*** Update File:` / `*** Move to:` lines name the files) and `bash`
(`command`; its exit code is `state.metadata.exit`, stdout and stderr together in `output`).

Memory is bounded: rows are streamed in order, and SQLite itself cuts each field a reader needs
(`json_extract`, `substr`) so a 50 MB tool output never reaches Python. The database is opened
read-only, and OpenCode may be writing it at the same time (it runs in WAL mode)."""

from __future__ import annotations

import errno
import os
import re
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any, NamedTuple

from .shell import failure
from .transcript import KEEP, Transcript, json_value, patched_files, todo_items

CLIENT = "opencode"
DB_NAME = "opencode.db"
DB_ENV = "OPENCODE_DB"
KNOWN_VERSION = "1.18.33"  # the OpenCode whose store this reader was written against
# What this reader needs of the store: a table for each, with these columns.
SCHEMA: dict[str, tuple[str, ...]] = {
    "session": ("id", "directory", "parent_id", "version", "time_updated", "time_archived"),
    "message": ("id", "session_id", "time_created", "data"),
    "part": ("id", "message_id", "session_id", "data"),
    "todo": ("session_id", "content", "status", "position"),
}
MAX_TEXT = 20_000  # characters kept of one ask, message or patch; the record caps come later
MAX_OUTPUT = 8_000  # characters of a failed command's output searched for its error line
BUSY_MS = 2_000  # how long a read waits on a writer holding the database

_METADATA = re.compile(r"</?bash_metadata>")  # OpenCode's tags around what it adds to an output
_EDIT_TOOLS = frozenset({"write", "edit", "multiedit"})

# One row per part, oldest first, with only what a reader needs, each field cut by SQLite
# (`summary` is a flag: a user message's `summary` is an object holding every diff).
_PARTS = f"""
SELECT json_extract(m.data, '$.role') AS role,
       json_type(m.data, '$.summary') = 'true' AS summary,
       p.message_id AS message_id,
       json_extract(p.data, '$.type') AS kind,
       json_extract(p.data, '$.synthetic') AS synthetic,
       substr(json_extract(p.data, '$.text'), 1, {MAX_TEXT}) AS text,
       json_extract(p.data, '$.tool') AS tool,
       json_extract(p.data, '$.state.status') AS status,
       substr(json_extract(p.data, '$.state.input.filePath'), 1, 4096) AS file_path,
       substr(json_extract(p.data, '$.state.input.command'), 1, 4096) AS command,
       substr(json_extract(p.data, '$.state.input.patchText'), 1, {MAX_TEXT}) AS patch,
       CASE WHEN json_extract(p.data, '$.tool') = 'todowrite'
            THEN substr(json_extract(p.data, '$.state.input.todos'), 1, {MAX_TEXT}) END AS todos,
       json_extract(p.data, '$.state.metadata.exit') AS exit_code,
       substr(coalesce(json_extract(p.data, '$.state.output'), json_extract(p.data, '$.state.error')),
              1, {MAX_OUTPUT}) AS output
FROM message AS m JOIN part AS p ON p.message_id = m.id
WHERE m.session_id = ?
ORDER BY m.time_created, m.id, p.id
"""


class Stored(NamedTuple):
    """One session in OpenCode's store: the database and the session's id."""

    db: Path
    session_id: str


def data_dir(home: Path, env: Mapping[str, str] | None = None) -> Path:
    """OpenCode's data folder: `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`."""
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or str(home / ".local" / "share")
    return Path(base) / "opencode"


def db_path(home: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """The database OpenCode uses under `home` (what `opencode db path` prints), or None when
    `OPENCODE_DB` says it lives in memory."""
    env = os.environ if env is None else env
    override = env.get(DB_ENV, "")
    if override == ":memory:":
        return None
    if override:
        path = Path(override).expanduser()
        return path if path.is_absolute() else data_dir(home, env) / path
    return data_dir(home, env) / DB_NAME


def locate(
    home: Path, cwd: Path, session_id: str = "", env: Mapping[str, str] | None = None
) -> Stored | None:
    """The session `read` should read: `session_id` if the store holds it, else the most
    recently updated top-level session (not a subagent's, not archived) that OpenCode ran in
    `cwd` or in a folder inside it. None when there is no store or no such session."""
    db = db_path(home, env)
    if db is None or not db.is_file():
        return None
    try:
        with closing(_connect(db)) as conn:
            if session_id:
                row = conn.execute("SELECT id FROM session WHERE id = ?", (session_id,)).fetchone()
                return Stored(db, session_id) if row else None
            here = os.path.realpath(cwd)
            rows = conn.execute(
                "SELECT id, directory FROM session WHERE parent_id IS NULL AND time_archived IS NULL "
                "ORDER BY time_updated DESC, id DESC"
            )
            for found, directory in rows:
                folder = _norm(str(directory or ""))
                if folder and (folder == here or folder.startswith(here.rstrip("/") + "/")):
                    return Stored(db, str(found))
    except sqlite3.Error:
        return None
    return None


def read(db: Path, session_id: str) -> Transcript:
    """Session `session_id` of the OpenCode database `db` (what `locate` returns). A missing
    database raises FileNotFoundError; a session it does not hold reads as an empty transcript,
    and a database that fails mid-read (locked, torn, another schema) gives what was read."""
    if not db.is_file():
        raise FileNotFoundError(errno.ENOENT, "no OpenCode database", str(db))
    transcript = Transcript(client=CLIENT, session_id=session_id)
    try:
        with closing(_connect(db)) as conn:
            row = conn.execute("SELECT directory FROM session WHERE id = ?", (session_id,)).fetchone()
            if row and row[0]:
                transcript.cwd = str(row[0])
            _read_parts(conn, transcript)
            todos = _todo_table(conn, session_id)
            if todos is not None:
                transcript.set_todos(todos)
    except sqlite3.Error:
        pass  # what was read so far stands
    return transcript


def _read_parts(conn: sqlite3.Connection, transcript: Transcript) -> None:
    last = Message()
    summary = Message()
    for row in _rows(conn, transcript.session_id):
        text = row["text"]
        if row["kind"] == "text" and isinstance(text, str) and text.strip() and not row["synthetic"]:
            if row["role"] == "user":
                transcript.asks.append(text.strip())
            elif row["role"] == "assistant" and row["summary"]:
                transcript.compact_summary = summary.add(row["message_id"], text)
            elif row["role"] == "assistant":
                transcript.last_message = last.add(row["message_id"], text)
        elif row["kind"] == "tool" and isinstance(row["tool"], str):
            _tool(transcript, row)


class Message:
    """The text parts of the latest assistant message seen, joined; at most MAX_TEXT characters
    of them, the first, however many parts a message has."""

    def __init__(self) -> None:
        self.id: object = None
        self.text = ""

    def add(self, message_id: object, text: str) -> str:
        if message_id != self.id:
            self.id, self.text = message_id, ""
        joined = f"{self.text}\n{text.strip()}" if self.text else text.strip()
        self.text = joined[:MAX_TEXT]
        return self.text


def _tool(transcript: Transcript, row: sqlite3.Row) -> None:
    tool, status, file_path = row["tool"], row["status"], row["file_path"]
    if tool == "todowrite" and status == "completed" and isinstance(row["todos"], str):
        items = _todo_items(row["todos"])
        if items is not None:
            transcript.set_todos(items)
    elif tool in _EDIT_TOOLS and status == "completed" and isinstance(file_path, str) and file_path:
        transcript.touch(file_path)
    elif tool == "apply_patch" and status == "completed" and isinstance(row["patch"], str):
        for name in patched_files(row["patch"]):
            transcript.touch(name)
    elif tool == "bash" and _failed(status, row["exit_code"]) and isinstance(row["command"], str):
        output = row["output"] if isinstance(row["output"], str) else ""
        if row["command"].strip():
            lines = [line for line in output.splitlines() if not _METADATA.fullmatch(line.strip())]
            transcript.failures.append(failure(row["command"], lines))


def _rows(conn: sqlite3.Connection, session_id: str) -> Iterator[sqlite3.Row]:
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    cursor.execute(_PARTS, (session_id,))
    while batch := cursor.fetchmany(200):
        yield from batch


def _todo_table(conn: sqlite3.Connection, session_id: str) -> list[tuple[str, str]] | None:
    """The `todo` table's list for the session (OpenCode's own last state), or None when the
    store has no such table (the `todowrite` calls read before stand then)."""
    try:
        rows = conn.execute(
            "SELECT substr(content, 1, ?), status FROM todo WHERE session_id = ? "
            "ORDER BY position DESC LIMIT ?",
            (MAX_TEXT, session_id, KEEP),
        ).fetchall()
    except sqlite3.OperationalError:
        return None
    return [(str(text), str(status)) for text, status in reversed(rows) if text]


def _todo_items(raw: str) -> list[tuple[str, str]] | None:
    """todowrite's `todos` (JSON, [{content, status, priority}]); None when cut or torn, so the
    list read before stands."""
    value = json_value(raw)
    return todo_items(value, "content") if isinstance(value, list) else None


def _failed(status: Any, exit_code: Any) -> bool:
    """A bash call that failed: it ended in error (timed out, aborted, refused) or it
    completed with a non-zero exit code."""
    nonzero = isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0
    return status == "error" or (status == "completed" and nonzero)


def _norm(path: str) -> str:
    return os.path.normpath(path) if path else ""


def _connect(db: Path) -> sqlite3.Connection:
    """`db` opened read-only (never created, never written, WAL honoured), waiting briefly on a
    writer."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
    return conn
