"""Admission: one statement (one round trip) that looks up the API key or OAuth access token,
sets the tenant, applies the rate limit of the request's budget and writes the request's audit
row.

`sessionvault_admit` (db/sql/functions/sessionvault_admit.sql) does it all inside Postgres, as the serving
role and under RLS; the key (or token: both arrive as a SHA-256) is read through
`sessionvault_key`, the one door the serving role has into the identity plane. A token must be
bound to `resource`, this server's MCP URL. A refused key is counted per minute
(`auth_failures`), not stored as a row; a rate-limited call is audited. The caller only maps
the answer.

On a warm instance a tool call's admission rides on the tool's own tenant transaction
(`Ride`, migration 0011): the server already knows whose credential it is from an earlier
admission, so `sessionvault_admit_as` opens the transaction in place of the tenant setting
and lets the tool's statements through only when it admits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from sessionvault.core.keys import WrappedKey
from sessionvault.db import pool
from sessionvault.db.pool import Database
from sessionvault.errors import SessionVaultError

Budget = Literal["tool", "protocol"]

# The tenant's proof (migration 0020) is read back from the setting the function just made, in
# the same statement: the function runs to its end before the select list is computed.
_PROOF = "current_setting('app.user_id', true) AS proof"
_ADMIT = f"SELECT *, {_PROOF} FROM sessionvault_admit(%s, %s, %s, %s, %s, %s, %s, %s, %s)"
_ADMIT_AS = f"SELECT *, {_PROOF} FROM sessionvault_admit_as(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
# A ride that needs the read scope alone writes only bookkeeping: the admission's own rows
# (rate-limit window, audit row), which an admission on its own commits without waiting for the
# WAL flush (0008), and, reading a workspace, its `workspace_access` row. `sessionvault_admit_as`
# puts the setting back for the tool's writes (0014); a read call writes no session data, so its
# commit need not wait either (a flush: ~1.5 ms on an idle disk, ~5 ms on a busy one). A crash in
# that moment can lose such a row, never a session or a claim.
_ADMIT_AS_READ = _ADMIT_AS.replace("SELECT *", "SELECT *, set_config('synchronous_commit', 'off', true)", 1)


@dataclass(frozen=True)
class Limits:
    per_minute: int
    per_day: int  # 0: no day window


@dataclass(frozen=True)
class Admission:
    # ok | unknown_key | revoked_key | disabled_user | revoked_token | expired_token
    # | wrong_resource | rate_limited; riding (`Ride`) also stale
    status: str
    user_id: str | None = None
    wrapped_dek: WrappedKey | None = None
    scopes: frozenset[str] = frozenset()
    window: str = ""  # minute | day, when rate_limited
    limit: int = 0
    retry_after_s: int = 0
    audit_id: int | None = None
    # The database's proof of the caller for this call's transactions (migration 0020): a
    # credential as much as the key, never logged; "" when not admitted.
    proof: str = field(default="", repr=False)


@dataclass(frozen=True)
class Request:
    """What admission is asked about one request."""

    key_hash: bytes
    budget: Budget
    limits: Limits
    request_id: str
    tool: str
    ip_hash: bytes | None
    ua_hash: bytes | None
    resource: str = ""  # "" matches no token: API keys only

    def params(self) -> tuple[Any, ...]:
        per_minute, per_day = self.limits.per_minute, self.limits.per_day
        return (self.key_hash, self.resource, self.budget, per_minute, per_day,
                self.request_id, self.tool, self.ip_hash, self.ua_hash)  # fmt: skip


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
    resource: str = "",
) -> Admission:
    """The request admitted (or not) in a statement of its own: one flight."""
    request = Request(key_hash, budget, limits, request_id, tool, ip_hash, ua_hash, resource)
    return admit_request(db, request)


def admit_request(db: Database, request: Request) -> Admission:
    params = request.params()
    return _admission(db.first_use(lambda conn: conn.execute(_ADMIT, params).fetchone()))


@dataclass
class Ride:
    """The request's admission as the opening of its first tenant transaction, for a
    credential the server expects to be `user_id`'s (with `wrapped_dek`) and to allow `scope`.
    `opening` goes down with the call (in its Principal, then in each `pool.Tenant`); `result`
    is None until a transaction carried it and committed; a 'stale' result means the
    expectation was wrong and nothing was written or let through."""

    request: Request
    user_id: str
    wrapped_dek: WrappedKey
    scope: str
    opening: pool.Opening = field(init=False)

    def __post_init__(self) -> None:
        expected = (self.user_id, self.wrapped_dek.blob, self.scope)
        sql = _ADMIT_AS_READ if self.scope == "read" else _ADMIT_AS
        self.opening = pool.Opening(self.user_id, sql, (*expected, *self.request.params()))

    @property
    def result(self) -> Admission | None:
        return _admission(self.opening.answer) if self.opening.done else None


def _admission(row: dict[str, Any] | None) -> Admission:
    if row is None:  # the functions always answer one row
        raise SessionVaultError("admission returned no row")
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
        proof=(row.get("proof") or "") if row["status"] == "ok" else "",
    )


def prune(db: Database, user_id: str) -> int:
    """Drop this user's counter slots that no window reads any more."""
    with db.tenant(user_id) as conn:
        cur = conn.execute(
            "DELETE FROM rate_counters WHERE user_id = %s AND slot < now() - interval '1 day 1 hour'",
            (user_id,),
        )
    return cur.rowcount
