"""What the HTTP API answers (`/api/v1`, docs/api.md), typed for the laptop side's callers."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class Handoff(TypedDict):
    state: Literal["open", "accepted", "expired", "superseded"]
    version: int
    to_client: NotRequired[str]
    accepted_by: NotRequired[str]
    accepted_with: NotRequired[str]
    accepted_person: NotRequired[str]
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
