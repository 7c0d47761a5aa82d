"""`delete_all_sessions` in two stages: the first call deletes nothing and answers the count
and a confirmation token; only a second call with that token and the exact phrase deletes.

The token is stateless: an HMAC, under a key derived from the user's own data key, over the
user, the repo filter and an expiry five minutes out. It cannot be forged without the key,
moved to another user or repo, or used late."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from typing import TYPE_CHECKING, Any

from sessionvault.core.records import DeleteAllArgs
from sessionvault.db import deletes
from sessionvault.errors import ValidationFailed

if TYPE_CHECKING:
    from sessionvault.core.vault import Principal, Vault

PHRASE = "I CONFIRM DELETE ALL"
TOKEN_TTL_S = 300


def _mac(dek: bytes, user_id: str, repo: str, expires: int) -> bytes:
    key = hashlib.sha256(b"sessionvault/delete-all/v1\x1f" + dek).digest()
    return hmac.new(key, f"{user_id}\x1f{repo}\x1f{expires}".encode(), hashlib.sha256).digest()


def make_token(dek: bytes, user_id: str, repo: str, now: float | None = None) -> str:
    expires = int(now if now is not None else time.time()) + TOKEN_TTL_S
    mac = _mac(dek, user_id, repo, expires)
    return base64.urlsafe_b64encode(expires.to_bytes(8, "big") + mac).decode().rstrip("=")


def check_token(dek: bytes, user_id: str, repo: str, token: str, now: float | None = None) -> None:
    refused = ValidationFailed(
        "invalid arguments: confirm_token: expired or not issued for this repo; call"
        " delete_all_sessions without a token to get a new one"
    )
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise refused from None
    if len(raw) != 40:
        raise refused
    expires = int.from_bytes(raw[:8], "big")
    if not hmac.compare_digest(raw[8:], _mac(dek, user_id, repo, expires)):
        raise refused
    if (now if now is not None else time.time()) > expires:
        raise refused


def delete_all(vault: Vault, who: Principal, args: DeleteAllArgs) -> dict[str, Any]:
    dek = vault.keys.unwrap(who.user_id, who.wrapped_dek)
    if not args.confirm_token:
        count = deletes.count(vault.db, who.user_id, args.repo)
        return {
            "deleted": False,
            "would_delete": count,
            "repo": args.repo or "(all repos)",
            "confirm_token": make_token(dek, who.user_id, args.repo),
            "expires_in_s": TOKEN_TTL_S,
            "next": f"to delete, call delete_all_sessions again with this confirm_token, the same repo"
            f" and confirm_phrase {PHRASE!r}",
        }
    if args.confirm_phrase != PHRASE:
        raise ValidationFailed(f"invalid arguments: confirm_phrase: must be exactly {PHRASE!r}")
    check_token(dek, who.user_id, args.repo, args.confirm_token)
    sessions, versions = deletes.delete_all(vault.db, who.user_id, args.repo)
    return {"deleted": True, "sessions_deleted": sessions, "versions_deleted": versions}
