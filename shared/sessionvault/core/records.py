"""The session record and every tool's arguments, with the caps a looping agent runs into."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from sessionvault.core.repos import canonical_repo
from sessionvault.errors import ValidationFailed

MAX_TEXT = 4000
MAX_ITEMS = 200
PREVIEW_CHARS = 120


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL (\\u0000) characters")
    return value


Text = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(_no_nul)]
MAX_NAME = 200
MAX_REPO = 300
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME), AfterValidator(_no_nul)]
# Every repo the server receives is canonicalized here, so one repository has one name
# whichever way a client spells it (core.repos).
Repo = Annotated[str, Field(max_length=MAX_REPO), AfterValidator(_no_nul), AfterValidator(canonical_repo)]
Items = Annotated[list[Text], Field(max_length=MAX_ITEMS)]
Client = Annotated[str, Field(max_length=100), AfterValidator(_no_nul)]


def _commit(value: str) -> str:
    if value and not (7 <= len(value) <= 40 and all(c in "0123456789abcdefABCDEF" for c in value)):
        raise ValueError("must be a git commit id: 7 to 40 hex digits")
    return value.lower()


Commit = Annotated[str, Field(max_length=40), AfterValidator(_commit)]
# A workspace's name (docs/teams.md); empty = the caller's personal space.
Workspace = Annotated[
    str,
    Field(max_length=MAX_NAME, description="A workspace you belong to; empty = your personal space"),
    AfterValidator(_no_nul),
]
Branch = Annotated[str, Field(max_length=200), AfterValidator(_no_nul)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=False)


class Decision(Strict):
    decision: Annotated[Text, Field(min_length=1)]
    reason: Annotated[Text, Field(min_length=1)]


class SaveArgs(Strict):
    name: Annotated[Name, Field(description="Session name; saving an existing name adds a version")]
    summary: Annotated[Text, Field(min_length=1, description="Where things stand, for the next tool")]
    repo: Annotated[Repo, Field(description="Repository identity, e.g. github.com/org/app")] = ""
    plan: Annotated[Items, Field(description="Plan steps")] = []
    decisions: Annotated[
        list[Decision], Field(max_length=MAX_ITEMS, description="Decisions with their reasons")
    ] = []
    todos: Annotated[Items, Field(description="Next steps")] = []
    files: Annotated[Items, Field(description="Relevant file paths")] = []
    errors: Annotated[Items, Field(description="Errors seen")] = []
    tried: Annotated[Items, Field(description="What was tried and the result")] = []
    client: Annotated[
        str,
        Field(max_length=MAX_REPO, description="Your client's name, e.g. claude-code"),
        AfterValidator(_no_nul),
    ] = ""
    branch: Annotated[Branch, Field(description="Git branch")] = ""
    commit: Annotated[Commit, Field(description="Git commit (HEAD)")] = ""
    handoff: Annotated[bool, Field(description="Offer this version as a handoff to the next client")] = False
    to_client: Annotated[Client, Field(description="Offer it only to this client (implies handoff)")] = ""
    workspace: Workspace = ""
    to_person: Annotated[
        str,
        Field(max_length=MAX_NAME, description="Offer it to this member of the workspace (implies handoff)"),
        AfterValidator(_no_nul),
    ] = ""

    @model_validator(mode="after")
    def _a_person_is_in_a_workspace(self) -> SaveArgs:
        if self.to_person and not self.workspace:
            raise ValueError("to_person: offers to a person are made in a workspace; give workspace too")
        return self


# Tool arguments that steer a save but are not part of the stored record.
SAVE_CONTROLS = frozenset({"handoff", "to_client", "workspace", "to_person"})


class LoadArgs(Strict):
    name: Annotated[
        str,
        Field(max_length=200, description="Exact name; empty = latest for repo"),
        AfterValidator(_no_nul),
    ] = ""
    repo: Annotated[Repo, Field(description="With no name: load this repo's latest session")] = ""
    mode: Annotated[
        Literal["brief", "normal", "full"],
        Field(description="brief=summary, normal=whole record, full=plus related sessions"),
    ] = "normal"
    version: Annotated[int, Field(ge=0, description="An earlier version (with name); 0 = latest")] = 0
    accept: Annotated[
        bool, Field(description="Claim the newest open handoff for repo (once; others then get found=false)")
    ] = False
    client: Annotated[Client, Field(description="Your client's name (to accept handoffs offered to it)")] = ""
    max_tokens: Annotated[
        int, Field(ge=0, le=100_000, description="Budget; cuts lists, reports omitted; 0 = none")
    ] = 0
    workspace: Workspace = ""

    @model_validator(mode="after")
    def _version_needs_a_name(self) -> LoadArgs:
        if self.version and not self.name:
            raise ValueError("version: give the session's name too")
        if self.accept and self.name:
            raise ValueError("accept: claims by repo; leave name empty")
        return self


class SearchArgs(Strict):
    query: Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(_no_nul)]
    repo: Annotated[Repo, Field(description="Only this repo")] = ""
    max_results: Annotated[int, Field(ge=1, le=20)] = 5
    max_tokens: Annotated[int, Field(ge=0, le=100_000, description="Budget; 0 = none")] = 0
    workspace: Workspace = ""


class ListArgs(Strict):
    repo: Annotated[Repo, Field(description="Only this repo")] = ""
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    cursor: Annotated[str, Field(max_length=200, description="next_cursor of the previous page")] = ""
    workspace: Workspace = ""


class DeleteArgs(Strict):
    name: Name
    workspace: Workspace = ""


class DeleteAllArgs(Strict):
    repo: Annotated[Repo, Field(description="Only this repo; empty = every session")] = ""
    confirm_token: Annotated[
        str, Field(max_length=200, description="From the first call; empty = count and get a token")
    ] = ""
    confirm_phrase: Annotated[str, Field(max_length=100, description="Exactly: I CONFIRM DELETE ALL")] = ""
    workspace: Workspace = ""


# The record as stored (encrypted) and returned by load_session.
RECORD_FIELDS = ("summary", "plan", "decisions", "todos", "files", "errors", "tried")


# A redaction marker (core/secret_patterns.MARKER), matched here without importing that table.
_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]*\]")


def preview(summary: str) -> str:
    """The first PREVIEW_CHARS characters, never ending inside a redaction marker: a cut one
    (`[REDAC`) reads as text someone wrote (issue 37), so the preview ends before it."""
    cut = summary[:PREVIEW_CHARS]
    opened = cut.rfind("[")
    if opened >= 0 and "]" not in cut[opened:] and _MARKER.match(summary, opened):
        return cut[:opened].rstrip()
    return cut


def parse(model: type[Strict], arguments: dict[str, Any] | None) -> Any:
    """Validate tool arguments; the error names each bad field and never echoes its value."""
    try:
        return model.model_validate(arguments or {})
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_input=False, include_url=False):
            where = ".".join(str(p) for p in err["loc"]) or "arguments"
            problems.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
        raise ValidationFailed("invalid arguments: " + "; ".join(problems)) from None


def embedding_text(record: Mapping[str, Any]) -> str:
    """What a session means, for search: name, repo, summary and the lists, most telling first."""
    parts = [record.get("name", ""), record.get("repo", ""), record.get("summary", "")]
    for field in ("plan", "todos", "tried"):
        parts += record.get(field, [])
    parts += [f"{d['decision']} because {d['reason']}" for d in record.get("decisions", [])]
    parts += [*record.get("errors", []), *record.get("files", [])]
    return "\n".join(p for p in parts if p)
