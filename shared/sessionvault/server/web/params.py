"""The values a page reads from its query or form, checked before any work is done: a session's
name by every tool's rules, a version number, a key's id. A bad one is a `ValidationFailed`,
which the view answers with a 400 page saying what was wrong."""

from __future__ import annotations

import uuid

from sessionvault.core import records
from sessionvault.errors import ValidationFailed


def session_name(query: dict[str, str]) -> str:
    name = query.get("name", "")
    if not name:
        raise ValidationFailed("invalid arguments: name: give the session's name")
    parsed: records.DeleteArgs = records.parse(records.DeleteArgs, {"name": name})  # every tool's rules
    return parsed.name


def number(query: dict[str, str], name: str, default: int) -> int:
    raw = query.get(name, "")
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 9):
        raise ValidationFailed(f"invalid arguments: {name}: must be a whole number")
    return int(raw)


def key_id(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise ValidationFailed("invalid form: key") from None
