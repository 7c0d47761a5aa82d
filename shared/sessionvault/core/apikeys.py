"""API keys: `sv_live_` + 24 random bytes (base64url); only their SHA-256 is ever stored."""

from __future__ import annotations

import base64
import hashlib
import secrets

from sessionvault.errors import AccountError

PREFIX = "sv_live_"
PREFIX_CHARS = 12  # shown next to the label, e.g. sv_live_a1b2
# load/list/search, save, delete/delete all, and the capture hooks' automatic checkpoints
SCOPES = ("read", "write", "delete", "checkpoint")
DEFAULT_SCOPES = ("read", "write")  # a new key cannot delete unless asked
# The hooks' own key (`connect --hooks`, `sessionvault dev`): look at session start (never
# claim), save checkpoints at the end of work. No model-facing key needs `checkpoint`: a
# checkpoint save prunes older checkpoints, so a model holding it could destroy them (issue 35).
HOOK_SCOPES = ("read", "checkpoint")


def parse_scopes(text: str) -> tuple[str, ...]:
    """ "read,write" -> ("read", "write"); empty -> the default; unknown names are refused."""
    asked = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip())) or DEFAULT_SCOPES
    unknown = [s for s in asked if s not in SCOPES]
    if unknown:
        raise AccountError(f"unknown scope(s) {', '.join(unknown)}: choose from {', '.join(SCOPES)}")
    return asked


def scope_hint(needed: str, what: str, have: frozenset[str], workspace: str = "") -> str:
    """Why `what` was refused and the key that would do it: the scopes this key has plus the
    missing one (suggesting only the missing one would drop what the caller already uses). In a
    workspace a new key is not enough when the caller's role there forbids the change (issue 37:
    a reader was told to make a delete key her role would still refuse): the hint says so."""
    wanted = ",".join(s for s in SCOPES if s in have | {needed})
    if needed == "checkpoint":  # the hooks' capability: what provisions it, not a model's key
        return (
            f"this API key lacks the 'checkpoint' scope that {what} needs: automatic checkpoints are"
            " saved by the capture hooks with a key of their own; run `sessionvault connect <client>"
            " --hooks` (or `sessionvault dev`) to give them one"
        )
    hint = (
        f"this API key lacks the {needed!r} scope that {what} needs;"
        f" create a key with it: sessionvault key create --scope {wanted}"
    )
    if workspace and needed in ("write", "delete"):
        hint += (
            f"; in workspace {workspace!r} your role must allow it too, and a reader's does not"
            " (list_sessions names your role in each workspace)"
        )
    return hint


def generate() -> str:
    return PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(24)).decode().rstrip("=")


def digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def display_prefix(key: str) -> str:
    return key[:PREFIX_CHARS]


def looks_like_key(value: str) -> bool:
    return value.startswith(PREFIX) and 30 <= len(value) <= 64
