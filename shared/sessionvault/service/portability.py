"""Taking one's sessions out whole, and bringing them in: the NDJSON export format.

One JSON object a line. The first line is the header `{"format": "sessionvault-export/1", ...}`,
the last `{"end": true, "sessions": N}` (so a stream cut at a line boundary is told from a whole
one); every line between is one session with every version still kept, oldest first:

    {"name": ..., "repo": ..., "versions": [{"version": 1, "saved_at": ..., "record": {...},
      "handoff": {"state": "accepted", ...} | absent}, ...]}

`record` is the decrypted session as save_session takes it (summary, plan, decisions, todos,
files, errors, tried, repo, client, branch, commit). An export is plaintext: it is as secret as
the sessions themselves (say so wherever it is written).

Import is idempotent: a version whose content one of the session's kept versions already holds
adds nothing; the others are saved in their order, so newer versions stay newer. The server
stamps each imported version with the time of the import (the export's `saved_at` is kept in
the export file, not re-stamped), and a handoff is not offered again by an import: its state
belongs to the clients that saw it then.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessionvault.core.checkpoints import is_automatic
from sessionvault.core.records import SAVE_CONTROLS, SaveArgs, parse
from sessionvault.db import rate_counters
from sessionvault.db import sessions as store
from sessionvault.db.pool import Tenant
from sessionvault.errors import BudgetExceeded, DecryptionFailed, ValidationFailed
from sessionvault.service import handoff
from sessionvault.service.principal import Principal
from sessionvault.service.sealing import open_record
from sessionvault.service.spaces import Space
from sessionvault.service.vault import Vault

FORMAT = "sessionvault-export/1"
# The fields of a stored record that a save takes back (saved_at is the server's own stamp).
SAVED_FIELDS = tuple(f for f in SaveArgs.model_fields if f not in SAVE_CONTROLS)
PAGE = 100


def export_lines(vault: Vault, who: Principal, workspace: str = "") -> Iterator[dict[str, Any]]:
    """The header, then every session of the caller's space (personal, or `workspace`) with
    every kept version, newest session first (decrypted one session at a time: memory is one
    session's, not the account's). The space is resolved and entered, and its first page read,
    here, before anything is produced: a stream's first byte is an answer (200), so a caller
    who may not read the workspace is refused (WorkspaceDenied: 404) before it. Each later read
    enters the workspace on its own, so a member removed while the export streams gets nothing
    more from the next read on."""
    space = vault.spaces.of(who, workspace)
    with vault.spaces.entered(who, space, "read", "export") as at:
        first = store.page(vault.db, at, "", PAGE + 1, None)
    return _exported(vault, who, space, first)


def _exported(vault: Vault, who: Principal, space: Space, rows: list[Any]) -> Iterator[dict[str, Any]]:
    yield {"format": FORMAT}
    dek = vault.keys.unwrap(space.id, space.wrapped)
    count = 0
    while True:
        for row in rows[:PAGE]:
            with vault.spaces.entered(who, space, "read", "export") as at:
                try:
                    line = _session(vault, at, dek, row["name"])
                except DecryptionFailed:  # re-keyed since this instance remembered its key
                    fresh = vault.spaces.renew(who, space)
                    if fresh is None:
                        raise
                    space, dek = fresh, vault.keys.unwrap(fresh.id, fresh.wrapped)
                    line = _session(vault, at, dek, row["name"])
            yield line
            count += 1
        if len(rows) <= PAGE:
            yield {"end": True, "sessions": count}
            return
        cursor = (rows[PAGE - 1]["updated_at"], str(rows[PAGE - 1]["id"]))
        with vault.spaces.entered(who, space, "read", "export") as at:
            rows = store.page(vault.db, at, "", PAGE + 1, cursor)


def export_session(vault: Vault, who: Principal, name: str, workspace: str = "") -> dict[str, Any]:
    """One session as an export line: every kept version, oldest first (none: no such
    session), in the caller's personal space or `workspace` (entered as every tool enters it)."""
    space = vault.spaces.of(who, workspace)
    with vault.spaces.entered(who, space, "read", "web/versions") as at:
        return _session(vault, at, vault.keys.unwrap(space.id, space.wrapped), name)


def offer_of(row: dict[str, Any]) -> dict[str, Any]:
    """A handoff as the API lists it: the session it offers, and the offer's state."""
    return {
        "name": row["name"],
        "repo": row["repo"],
        "offered_at": store.iso(row["offered_at"]),
        **(handoff.state_of(row) or {}),
    }


def _session(vault: Vault, at: Tenant, dek: bytes, name: str) -> dict[str, Any]:
    versions = []
    for row in store.every_version(vault.db, at, name):
        record = open_record(dek, at.space, row)
        entry: dict[str, Any] = {
            "version": row["version"],
            "saved_at": record.pop("saved_at", ""),
            "record": {k: record[k] for k in SAVED_FIELDS if k in record},
        }
        offered = handoff.state_of(row)
        if offered is not None:
            entry["handoff"] = offered
        versions.append(entry)
    repo = versions[-1]["record"].get("repo", "") if versions else ""
    return {"name": name, "repo": repo, "versions": versions}


@dataclass
class Imported:
    """What an import did: counts, and one line per session that could not be taken."""

    sessions: int = 0
    versions_added: int = 0
    versions_present: int = 0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "versions_added": self.versions_added,
            "versions_already_there": self.versions_present,
            "problems": self.problems,
        }


def import_lines(
    vault: Vault,
    who: Principal,
    lines: Sequence[dict[str, Any]],
    *,
    dry_run: bool = False,
    workspace: str = "",
    limits: tuple[int, int] | None = None,
) -> Imported:
    """Bring sessions in from export lines (the header first); see the module docstring. With
    the caller's rate `limits` (per minute, per day; the HTTP API's), each version the request
    carries is one tool call (the admission counted one), taken from the windows before any
    work and only if all of them fit: else BudgetExceeded says how many fit now and when."""
    space = vault.spaces.of(who, workspace)
    if limits is not None and not dry_run:
        _take_budget(vault, who, lines, *limits)
    return _import_all(vault, who, lines, Imported(), dry_run, space)


def _take_budget(vault: Vault, who: Principal, lines: Sequence[Any], per_minute: int, per_day: int) -> None:
    versions = (line.get("versions") for line in lines[1:] if isinstance(line, dict))
    carried = sum(len(v) for v in versions if isinstance(v, list))
    if carried <= 1:
        return
    taken = rate_counters.reserve(vault.db, who.at(), carried - 1, per_minute, per_day)
    if not taken.taken:
        limit = f"{per_minute} a minute" + (f", {per_day} a day" if per_day else "")
        raise BudgetExceeded(
            f"this import carries {carried} versions, one tool call each ({limit}); {taken.fits_now + 1}"
            f" fit now, more in {taken.retry_after_s} s: send smaller batches (sessionvault import"
            " paces itself) or raise the limit for a bulk move (SESSIONVAULT_RATE_PER_MINUTE/_PER_DAY)",
            retry_after_s=taken.retry_after_s,
            fits_now=taken.fits_now + 1,
            per_minute=per_minute,
        )


# What one import request may hold: `sessionvault import` sends batches well below both.
MAX_REQUEST_LINES = 500  # session lines
MAX_REQUEST_VERSIONS = 500


def check_request(lines: list[Any]) -> None:
    """Refuse, before any work, a request of more lines or versions than one may hold."""
    sessions = [
        line["versions"]
        for line in lines
        if isinstance(line, dict) and isinstance(line.get("versions"), list)
    ]
    versions = sum(len(kept) for kept in sessions)
    if len(lines) > MAX_REQUEST_LINES + 2 or versions > MAX_REQUEST_VERSIONS:  # + the header and end lines
        raise ValidationFailed(
            f"invalid arguments: an import request holds at most {MAX_REQUEST_LINES} sessions and"
            f" {MAX_REQUEST_VERSIONS} versions (this one: {len(sessions)} sessions, {versions} versions);"
            " send it in batches, as `sessionvault import ndjson` does"
        )


def _import_all(
    vault: Vault, who: Principal, lines: Iterable[dict[str, Any]], done: Imported, dry_run: bool, space: Space
) -> Imported:
    it = iter(lines)
    header = next(it, None)
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValidationFailed(f'not a SessionVault export: the first line must be {{"format": "{FORMAT}"}}')
    dek = vault.keys.unwrap(space.id, space.wrapped)
    for number, line in enumerate(it, start=2):
        if isinstance(line, dict) and line.get("end") is True:
            continue  # an export's last line; a batch of one may carry it or not
        try:
            _import_session(vault, who, space, dek, line, done, dry_run)
        except ValidationFailed as exc:
            done.problems.append(f"line {number}: {exc}")
    return done


def _import_session(
    vault: Vault, who: Principal, space: Space, dek: bytes, line: Any, done: Imported, dry_run: bool
) -> None:
    if (
        not isinstance(line, dict)
        or not isinstance(line.get("name"), str)
        or not isinstance(line.get("versions"), list)
    ):
        raise ValidationFailed("a session line needs a name and a list of versions")
    if is_automatic(line["name"]) and (space.name or "checkpoint" not in who.scopes):
        # The hooks' rules (save_checks.checkpoint_rules), told per line so the rest still imports.
        raise ValidationFailed(
            "skipped an automatic checkpoint (auto/ name): checkpoints are personal, and imported"
            " only with the hooks' key (the checkpoint scope)"
        )
    with vault.spaces.entered(who, space, "write", "import") as at:
        kept = store.every_version(vault.db, at, line["name"])
    present = {_content(open_record(dek, space.id, row)) for row in kept}
    done.sessions += 1
    for version in line["versions"]:
        record = version.get("record") if isinstance(version, dict) else None
        if not isinstance(record, dict):
            raise ValidationFailed("a version needs a record")
        fields = {k: record[k] for k in SAVED_FIELDS if k in record}
        args = parse(SaveArgs, {**fields, "name": line["name"], "workspace": space.name})
        key = _content(_as_stored(vault, args))
        if key in present:
            done.versions_present += 1
            continue
        if not dry_run:
            vault.save(who, args, checkpoint=is_automatic(args.name))  # an export's checkpoints stay so
        present.add(key)
        done.versions_added += 1


def _as_stored(vault: Vault, args: SaveArgs) -> dict[str, Any]:
    """The record a save of `args` would store (redacted as the vault redacts), so that content
    holding a secret matches its stored, redacted version on a second import."""
    record = args.model_dump(mode="json")
    if vault.redact:
        from sessionvault.core.redact import scrub  # detect-secrets: only when importing

        record, _ = scrub(record)
    return record


def _content(record: dict[str, Any]) -> str:
    """A version's content, comparable: the saved fields only, in one canonical JSON."""
    return json.dumps({k: record.get(k) for k in SAVED_FIELDS}, sort_keys=True, ensure_ascii=False)
