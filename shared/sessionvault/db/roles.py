"""The login roles' passwords, set by the database owner when a stack deploys (the Database
custom resource, sessionvault.jobs.provision.resource).

The password travels as a SCRAM-SHA-256 verifier, never in clear text: PostgreSQL stores a
pre-hashed password as it is, so the clear text never reaches the server, its statement log
(a failing ALTER ROLE is logged with its text) or a pooler in between."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

import psycopg
from psycopg import sql

from sessionvault.errors import ProvisionFailed

APP_ROLE = "sessionvault_app"
ADMIN_ROLE = "sessionvault_admin"
MAINT_ROLE = "sessionvault_maint"
LOGIN_ROLES = (APP_ROLE, ADMIN_ROLE, MAINT_ROLE)

SCRAM_ITERATIONS = 4096  # PostgreSQL's own default (scram_iterations)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def scram_verifier(password: str, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS) -> str:
    """What PostgreSQL stores for `password` (RFC 5802/7677, the format of pg_authid.rolpassword).
    ASCII only: SASLprep leaves ASCII unchanged, so no normalisation can make it differ from
    what the server computes at login (the stack generates letters and digits)."""
    if not password.isascii() or not password.isprintable() or not password:
        raise ProvisionFailed("a role password must be printable ASCII (the stack makes letters and digits)")
    salt = salt or os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.digest(salted, b"Server Key", "sha256")
    return f"SCRAM-SHA-256${iterations}:{_b64(salt)}${_b64(stored_key)}:{_b64(server_key)}"


def check_unprivileged(conn: psycopg.Connection, role: str) -> None:
    """Refuse to give a password to a role that could bypass row-level security or that owns
    the schema: the serving path must never hold such a login."""
    row = conn.execute(
        "SELECT rolsuper, rolbypassrls, rolname = current_user FROM pg_roles WHERE rolname = %s", (role,)
    ).fetchone()
    if row is None:
        raise ProvisionFailed(f"the role {role} does not exist after the migrations ran")
    superuser, bypassrls, is_owner = row
    if superuser or bypassrls or is_owner:
        raise ProvisionFailed(
            f"the role {role} is a superuser, has BYPASSRLS or is the owner: refusing to let it log in"
        )
    if role == APP_ROLE:  # the tenant proofs' keys and minting are the database's alone (0020)
        privileges = conn.execute(
            # NULL before migration 0020 made them (a deploy that applies older migrations first)
            "SELECT has_table_privilege(%s, to_regclass('public.tenant_proof_keys'), 'SELECT'),"
            " has_function_privilege(%s,"
            " to_regprocedure('public.sessionvault_mint_proof(uuid, integer)'), 'EXECUTE')",
            (role, role),
        ).fetchone()
        reads, mints = privileges if privileges else (True, True)
        if reads or mints:
            raise ProvisionFailed(
                f"the role {role} can read the tenant proofs' keys or mint a proof: refusing"
            )


def set_login_password(conn: psycopg.Connection, role: str, password: str) -> None:
    """LOGIN with this password (as a verifier). The owner needs CREATEROLE and, on PostgreSQL
    16+, ADMIN on the role, which it has for the roles its migrations created."""
    check_unprivileged(conn, role)
    statement = sql.SQL("ALTER ROLE {} WITH LOGIN PASSWORD {}").format(
        sql.Identifier(role), sql.Literal(scram_verifier(password))
    )
    conn.execute(statement)
