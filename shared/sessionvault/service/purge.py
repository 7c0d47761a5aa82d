"""`delete_all_sessions` in two stages: the first call deletes nothing and answers the count
and a confirmation token; only a second call with that token and the exact phrase deletes.

The token is stateless: an HMAC, under a key derived from the user's own data key, over the
user, the repo filter, an expiry five minutes out, and what it counted: the number of sessions
and the database time of the count. It cannot be forged without the key, moved to another user
or repo, or used late; and it deletes only the sessions that existed when it was issued, and
only while they are still the number it showed. So it is single-use in effect: after it ran,
those sessions are gone and a replay finds none (refused); a session saved after the count is
never deleted by it."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sessionvault.core.records import DeleteAllArgs
from sessionvault.db import deletes
from sessionvault.db.pool import Tenant
from sessionvault.errors import ValidationFailed

if TYPE_CHECKING:
    from sessionvault.service.principal import Principal
    from sessionvault.service.vault import Vault

PHRASE = "I CONFIRM DELETE ALL"
TOKEN_TTL_S = 300


_TOKEN = struct.Struct(">qqI32s")  # expires (s), issued (µs since the epoch), count, MAC


def _mac(dek: bytes, user_id: str, repo: str, expires: int, issued_us: int, count: int) -> bytes:
    key = hashlib.sha256(b"sessionvault/delete-all/v2\x1f" + dek).digest()
    message = f"{user_id}\x1f{repo}\x1f{expires}\x1f{issued_us}\x1f{count}".encode()
    return hmac.new(key, message, hashlib.sha256).digest()


@dataclass(frozen=True)
class Counted:
    """What a valid token counted: `count` sessions that existed at `issued`."""

    issued: datetime
    count: int


def make_token(dek: bytes, user_id: str, repo: str, counted: Counted, now: float | None = None) -> str:
    expires = int(now if now is not None else time.time()) + TOKEN_TTL_S
    issued_us = _micros(counted.issued)
    mac = _mac(dek, user_id, repo, expires, issued_us, counted.count)
    return base64.urlsafe_b64encode(_TOKEN.pack(expires, issued_us, counted.count, mac)).decode().rstrip("=")


def check_token(dek: bytes, user_id: str, repo: str, token: str, now: float | None = None) -> Counted:
    refused = ValidationFailed(
        "invalid arguments: confirm_token: expired or not issued for this repo; call"
        " delete_all_sessions without a token to get a new one"
    )
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        expires, issued_us, count, mac = _TOKEN.unpack(raw)
    except (binascii.Error, ValueError, struct.error):
        raise refused from None
    if not hmac.compare_digest(mac, _mac(dek, user_id, repo, expires, issued_us, count)):
        raise refused
    if (now if now is not None else time.time()) > expires:
        raise refused
    return Counted(datetime.fromtimestamp(issued_us / 1e6, tz=UTC), count)


def _micros(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


def delete_all(vault: Vault, who: Principal, args: DeleteAllArgs) -> dict[str, Any]:
    """Both stages; in a workspace, an owner's call only (the database checks the role)."""
    space = vault.spaces.of(who, args.workspace)
    with vault.spaces.entered(who, space, "own", "delete_all_sessions") as at:
        return _delete_all(vault, at, vault.keys.unwrap(space.id, space.wrapped), args)


def _delete_all(vault: Vault, at: Tenant, dek: bytes, args: DeleteAllArgs) -> dict[str, Any]:
    user_id = at.space
    if not args.confirm_token:
        count, counted_at = deletes.count(vault.db, at, args.repo)
        return {
            "deleted": False,
            "would_delete": count,
            "repo": args.repo or "(all repos)",
            "confirm_token": make_token(dek, user_id, args.repo, Counted(counted_at, count)),
            "expires_in_s": TOKEN_TTL_S,
            "next": f"to delete, call delete_all_sessions again with this confirm_token, the same repo"
            f" and confirm_phrase {PHRASE!r}; it deletes these {count} sessions only, once",
        }
    if args.confirm_phrase != PHRASE:
        raise ValidationFailed(f"invalid arguments: confirm_phrase: must be exactly {PHRASE!r}")
    counted = check_token(dek, user_id, args.repo, args.confirm_token)
    removed = deletes.delete_all(vault.db, at, args.repo, counted.issued, counted.count)
    if removed is None:
        raise ValidationFailed(
            f"invalid arguments: confirm_token: it counted {counted.count} sessions, and they are not all"
            " there any more (the token was used, or some were deleted since); nothing was deleted."
            " Call delete_all_sessions without a token to count again"
        )
    return {"deleted": True, "sessions_deleted": removed[0], "versions_deleted": removed[1]}
