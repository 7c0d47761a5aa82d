"""Admission: one statement (one round trip) that looks up the API key or OAuth access token,
sets the tenant, applies the rate limit of the request's budget and writes the request's audit
row.

`sessionvault_admit` (migrations 0002, 0003, 0005) does it all inside Postgres, as the serving
role and under RLS; the key (or token: both arrive as a SHA-256) is read through
`sessionvault_key`, the one door the serving role has into the identity plane. A token must be
bound to `resource`, this server's MCP URL. A refused key is counted per minute
(`auth_failures`), not stored as a row; a rate-limited call is audited. The caller only maps
the answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sessionvault.core.keys import WrappedKey
from sessionvault.db.pool import Database
from sessionvault.errors import SessionVaultError

Budget = Literal["tool", "protocol"]

_ADMIT = "SELECT * FROM sessionvault_admit(%s, %s, %s, %s, %s, %s, %s, %s, %s)"


@dataclass(frozen=True)
class Limits:
    per_minute: int
    per_day: int  # 0: no day window


@dataclass(frozen=True)
class Admission:
    # ok | unknown_key | revoked_key | disabled_user | revoked_token | expired_token
    # | wrong_resource | rate_limited
    status: str
    user_id: str | None = None
    wrapped_dek: WrappedKey | None = None
    scopes: frozenset[str] = frozenset()
    window: str = ""  # minute | day, when rate_limited
    limit: int = 0
    retry_after_s: int = 0
    audit_id: int | None = None


def admit(
    db: Database,
    key_hash: bytes,
    budget: Budget,
    limits: Limits,
    *,
    request_id: str,
    tool: str,
    ip_hash: bytes | None,
    ua_hash: bytes | None,
    resource: str = "",  # "" matches no token: API keys only
) -> Admission:
    params = (
        key_hash,
        resource,
        budget,
        limits.per_minute,
        limits.per_day,
        request_id,
        tool,
        ip_hash,
        ua_hash,
    )
    row = db.first_use(lambda conn: conn.execute(_ADMIT, params).fetchone())
    if row is None:  # the function always answers one row
        raise SessionVaultError("sessionvault_admit returned no row")
    wrapped = WrappedKey.from_row(row) if row["dek_wrapped"] is not None else None
    return Admission(
        status=row["status"],
        user_id=str(row["user_id"]) if row["user_id"] else None,
        wrapped_dek=wrapped,
        scopes=frozenset(row["scopes"] or ()),
        window=row["full_window"] or "",
        limit=row["window_limit"] or 0,
        retry_after_s=row["retry_after"] or 0,
        audit_id=row["audit_id"],
    )


def prune(db: Database, user_id: str) -> int:
    """Drop this user's counter slots that no window reads any more."""
    with db.tenant(user_id) as conn:
        cur = conn.execute(
            "DELETE FROM rate_counters WHERE user_id = %s AND slot < now() - interval '1 day 1 hour'",
            (user_id,),
        )
    return cur.rowcount
