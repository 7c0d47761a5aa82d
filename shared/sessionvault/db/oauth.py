"""OAuth state in Postgres (migrations 0005, 0008): clients (registered, or stored from their
metadata document), pending authorization requests, codes and tokens. Every write is one call
of a SECURITY DEFINER function: the serving role may read clients and pending requests, and
nothing else of these tables. Codes and tokens are passed in
and looked up only as SHA-256 hashes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from sessionvault.db.pool import Database


@dataclass(frozen=True)
class Client:
    client_id: str
    secret_hash: bytes | None
    info: dict[str, Any]  # the registered metadata (RFC 7591), without the secret
    approved: bool = False  # some user has approved it (then /authorize errors may go to it)
    document: bool = False  # its client_id is the URL of its metadata document (CIMD)
    fresh: bool = False  # a document client whose cached document has not expired


@dataclass(frozen=True)
class Pending:
    id: str
    client_id: str
    redirect_uri: str
    state: str | None
    code_challenge: str
    scopes: tuple[str, ...]
    resource: str


@dataclass(frozen=True)
class Code:
    client_id: str
    redirect_uri: str
    code_challenge: str
    scopes: tuple[str, ...]
    resource: str
    expires_at: datetime


@dataclass(frozen=True)
class Token:
    kind: str  # access | refresh
    client_id: str
    scopes: tuple[str, ...]
    resource: str
    expires_at: datetime


@dataclass(frozen=True)
class Approval:
    status: str  # ok | unknown_request | bad_key | no_scope
    redirect_uri: str | None = None
    state: str | None = None


@dataclass(frozen=True)
class Minted:
    ok: bool
    scopes: tuple[str, ...] = ()


def _one(db: Database, sql: str, params: tuple[Any, ...]) -> dict[str, Any] | None:
    return db.first_use(lambda conn: conn.execute(sql, params).fetchone())


def register(db: Database, client: Client, caps: tuple[int, int], address: bytes | None) -> str:
    """Store a new client unless this hour's registrations are used up: `caps` is (server-wide,
    per address). Answers 'ok', 'address_cap' or 'server_cap'."""
    per_hour, per_address = caps
    row = _one(
        db,
        "SELECT sessionvault_oauth_register(%s, %s, %s, %s, %s, %s) AS outcome",
        (client.client_id, client.secret_hash, Jsonb(client.info), per_hour, address, per_address),
    )
    return str(row["outcome"]) if row else "server_cap"


def client(db: Database, client_id: str) -> Client | None:
    row = _one(
        db,
        "SELECT client_id, secret_hash, info, last_used_at IS NOT NULL AS approved,"
        " document_expires_at IS NOT NULL AS document,"
        " coalesce(document_expires_at > clock_timestamp(), false) AS fresh"
        " FROM oauth_clients WHERE client_id = %s",
        (client_id,),
    )
    if row is None:
        return None
    return Client(  # jsonb arrives as a dict
        row["client_id"], row["secret_hash"], row["info"], row["approved"], row["document"], row["fresh"]
    )


def document(
    db: Database,
    client_id: str,
    info: dict[str, Any],
    ttl_s: int,
    caps: tuple[int, int],
    address: bytes | None,
) -> str:
    """Store (or refresh) a client from its fetched metadata document, cached for `ttl_s`. A new
    one counts against this hour's registrations, `caps` (server-wide, per address), like a
    registration. Answers 'ok', 'address_cap', 'server_cap' or 'conflict' (not a document's id)."""
    per_hour, per_address = caps
    row = _one(
        db,
        "SELECT sessionvault_oauth_document(%s, %s, %s, %s, %s, %s) AS outcome",
        (client_id, Jsonb(info), ttl_s, per_hour, address, per_address),
    )
    return str(row["outcome"]) if row else "conflict"


def begin(db: Database, request: Pending, per_client: int) -> bool:
    """Store a pending authorization request (10 minutes); False when the client has too many."""
    row = _one(
        db,
        "SELECT sessionvault_oauth_begin(%s, %s, %s, %s, %s, %s, %s, %s) AS ok",
        (
            request.id,
            request.client_id,
            request.redirect_uri,
            request.state,
            request.code_challenge,
            list(request.scopes),
            request.resource,
            per_client,
        ),
    )
    return bool(row and row["ok"])


def pending(db: Database, request_id: str) -> tuple[Pending, Client] | None:
    """A live (unexpired, undecided) request and its client, for the consent page."""
    row = _one(
        db,
        "SELECT r.id, r.client_id, r.redirect_uri, r.state, r.code_challenge, r.scopes, r.resource,"
        " c.secret_hash, c.info"
        " FROM oauth_requests r JOIN oauth_clients c USING (client_id)"
        " WHERE r.id = %s AND r.used_at IS NULL AND r.expires_at > clock_timestamp()",
        (request_id,),
    )
    if row is None:
        return None
    request = Pending(
        row["id"],
        row["client_id"],
        row["redirect_uri"],
        row["state"],
        row["code_challenge"],
        tuple(row["scopes"]),
        row["resource"],
    )
    return request, Client(row["client_id"], row["secret_hash"], row["info"])


def approve(db: Database, request_id: str, key_hash: bytes, code_hash: bytes) -> Approval:
    row = _one(db, "SELECT * FROM sessionvault_oauth_approve(%s, %s, %s)", (request_id, key_hash, code_hash))
    if row is None:
        return Approval("unknown_request")
    return Approval(row["status"], row["redirect_uri"], row["state"])


def deny(db: Database, request_id: str) -> tuple[str, str | None] | None:
    """Close a live request; where to send the browser (redirect URI, state), or None."""
    row = _one(db, "SELECT * FROM sessionvault_oauth_deny(%s)", (request_id,))
    return (row["redirect_uri"], row["state"]) if row else None


def code(db: Database, code_hash: bytes) -> Code | None:
    """An unused code; a used one revokes what it produced and reads as absent."""
    row = _one(db, "SELECT * FROM sessionvault_oauth_code(%s)", (code_hash,))
    if row is None:
        return None
    return Code(
        row["client_id"],
        row["redirect_uri"],
        row["code_challenge"],
        tuple(row["scopes"]),
        row["resource"],
        row["expires_at"],
    )


@dataclass(frozen=True)
class Pair:
    """The hashes and lifetimes of a new access and refresh token, minted together."""

    access_hash: bytes
    refresh_hash: bytes
    access_ttl_s: int
    refresh_ttl_s: int

    def params(self) -> tuple[bytes, bytes, int, int]:
        return (self.access_hash, self.refresh_hash, self.access_ttl_s, self.refresh_ttl_s)


def exchange(
    db: Database,
    code_hash: bytes,
    *,
    client_id: str,
    redirect_uri: str,
    verifier: str,
    resource: str,
    pair: Pair,
) -> Minted:
    row = _one(
        db,
        "SELECT * FROM sessionvault_oauth_exchange(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (code_hash, client_id, redirect_uri, verifier, resource, *pair.params()),
    )
    return _minted(row)


def token(db: Database, token_hash: bytes) -> Token | None:
    """A live token; a refresh token already used revokes its family and reads as absent."""
    row = _one(db, "SELECT * FROM sessionvault_oauth_token(%s)", (token_hash,))
    if row is None:
        return None
    return Token(row["kind"], row["client_id"], tuple(row["scopes"]), row["resource"], row["expires_at"])


def refresh(
    db: Database, token_hash: bytes, *, client_id: str, scopes: tuple[str, ...], resource: str, pair: Pair
) -> Minted:
    row = _one(
        db,
        "SELECT * FROM sessionvault_oauth_refresh(%s, %s, %s, %s, %s, %s, %s, %s)",
        (token_hash, client_id, list(scopes), resource, *pair.params()),
    )
    return _minted(row)


def _minted(row: dict[str, Any] | None) -> Minted:
    if row is None or row["status"] != "ok":
        return Minted(False)
    return Minted(True, tuple(row["scopes"]))


def revoke(db: Database, token_hash: bytes, client_id: str) -> None:
    """RFC 7009: the whole family of the token with this hash, if it is this client's (used,
    expired or live alike); anything else: nothing, silently."""
    db.first_use(
        lambda conn: conn.execute("SELECT sessionvault_oauth_revoke(%s, %s)", (token_hash, client_id))
    )


def prune(db: Database) -> dict[str, int]:
    """Expired requests, codes and tokens, and clients never approved within a day."""
    rows = db.first_use(lambda conn: conn.execute("SELECT * FROM sessionvault_oauth_prune()").fetchall())
    return {row["what"]: int(row["deleted"]) for row in rows}
