"""A small typed client of the HTTP API (`/api/v1`, docs/api.md) for the laptop side: the
`sessions`, `export` and `import` commands. One function per call; the HTTP under it is
`transport`, the answers' types `answers`, a batched import `batch_import`.

`rpc.request` reads at most 1 MB of an answer and cannot stream, while one session (1 MB of
record, JSON-escaped) or its version list may be larger and an export is a stream of any
length; so the calls here open the connection themselves (`transport`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from sessionvault.errors import Unavailable
from sessionvault.local.remote.api_types import (
    Deleted,
    ExportSession,
    HandoffList,
    ImportResult,
    SearchResults,
    Session,
    SessionList,
)
from sessionvault.local.remote.transport import (
    IMPORT_TIMEOUT_S,
    NDJSON,
    TIMEOUT_S,
    Api,
    call_json,
    failure,
    open_call,
    read_answer,
    read_line,
)


def list_sessions(api: Api, *, repo: str = "", limit: int = 20, cursor: str = "") -> SessionList:
    """GET /sessions: the newest sessions (at most 100 a page; `next_cursor` for the next)."""
    return cast(
        SessionList, call_json(api, "GET", "/sessions", {"repo": repo, "limit": limit, "cursor": cursor})
    )


def get_session(api: Api, name: str, *, version: int = 0, mode: str = "normal") -> Session:
    """GET /session: the session named `name` (its latest version, or `version`)."""
    return cast(Session, call_json(api, "GET", "/session", {"name": name, "version": version, "mode": mode}))


def session_versions(api: Api, name: str) -> ExportSession:
    """GET /session/versions: every kept version, oldest first, each with its handoff state."""
    return cast(ExportSession, call_json(api, "GET", "/session/versions", {"name": name}))


def delete_session(api: Api, name: str) -> Deleted:
    """DELETE /session: the session and its history (the key needs the delete scope)."""
    return cast(Deleted, call_json(api, "DELETE", "/session", {"name": name}))


def search(api: Api, query: str, *, repo: str = "", limit: int = 5) -> SearchResults:
    """GET /search: sessions by meaning (a 503, ProviderUnavailable, without embeddings)."""
    return cast(SearchResults, call_json(api, "GET", "/search", {"q": query, "repo": repo, "limit": limit}))


def list_handoffs(api: Api, *, repo: str = "", state: str = "", limit: int = 50) -> HandoffList:
    """GET /handoffs: offers, newest first, with their state."""
    return cast(
        HandoffList, call_json(api, "GET", "/handoffs", {"repo": repo, "state": state, "limit": limit})
    )


def export(api: Api, workspace: str = "") -> Iterator[bytes]:
    """GET /export: the NDJSON export (of `workspace`, else the personal space), line by line as
    it streams in (each line ends in b"\\n"); the connection is closed when the iterator is."""
    query = {"workspace": workspace} if workspace else {}
    conn, response = open_call(api, "GET", "/export", query, timeout=TIMEOUT_S)
    try:
        if response.status != 200:
            raise failure(api, response.status, read_answer(response), response)
        while line := read_line(api, response):
            if not line.endswith(b"\n"):  # every line the server sends ends in one
                raise Unavailable(f"the export from {api.root} was cut off mid-line: export again")
            yield line
    finally:
        conn.close()


def import_export(api: Api, body: bytes, *, dry_run: bool = False, workspace: str = "") -> ImportResult:
    """POST /import: an export document (its header line first), into `workspace` or the personal
    space; idempotent. `dry_run`: what it would add, saving nothing."""
    query: dict[str, object] = {"dry_run": 1} if dry_run else {}
    if workspace:
        query["workspace"] = workspace
    out = call_json(api, "POST", "/import", query, body=body, content_type=NDJSON, timeout=IMPORT_TIMEOUT_S)
    return cast(ImportResult, out)
