"""The owner connection, made safe whatever the owner secret says: the server proves its name with
a certificate from a known CA (verify-full: the system CAs or the DatabaseCaBundle file), only
SCRAM-SHA-256 may carry the password (require_auth), connecting is bounded and no statement may
outlive the function's own time limit; and a failure to connect is explained for the stack
events (which CA, which authentication)."""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import Mapping
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from sessionvault.errors import ProvisionFailed
from sessionvault.jobs.provision.config import Config
from sessionvault.jobs.provision.secrets import Scrubber

CONNECT_TIMEOUT_S = 10
SAFETY_MARGIN_MS = 30_000  # left to answer CloudFormation after the last statement

# libpq's own sslrootcert=system looks where the OpenSSL it was built with looks: psycopg-binary's
# bundled OpenSSL looks under /usr/lib/psycopg-openssl/, absent on Lambda. The system store is
# therefore named by its file: the first of these that exists.
SYSTEM_CA_FILES = (
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/cert.pem",
)
LIBPQ_REQUIRE_AUTH = 160000  # require_auth is libpq 16's
OWNER_AUTH = "scram-sha-256"
SECURITY_KEYS = ("sslmode", "sslrootcert", "require_auth")  # set here, whatever the secret says


def system_ca_file() -> str | None:
    candidates = (os.environ.get("SSL_CERT_FILE", ""), ssl.get_default_verify_paths().cafile or "")
    return next((c for c in (*candidates, *SYSTEM_CA_FILES) if c and Path(c).is_file()), None)


def connection_security(config: Config, base_dir: Path) -> dict[str, str]:
    """The libpq parameters that make the owner connection safe: the server proves its name with
    a certificate from a known CA (verify-full), and only SCRAM may carry the password."""
    if psycopg.pq.version() < LIBPQ_REQUIRE_AUTH:
        raise ProvisionFailed(
            f"libpq {psycopg.pq.version()} cannot require SCRAM (require_auth needs libpq 16): "
            "the owner's password is not sent"
        )
    security = {"sslmode": config.sslmode, "require_auth": OWNER_AUTH}
    if config.sslmode != "verify-full":
        return security
    if config.sslrootcert in ("", "system"):
        found = system_ca_file()
        if found is None:
            raise ProvisionFailed(
                "no system CA bundle was found to verify the database: set DatabaseCaBundle"
            )
        return {**security, "sslrootcert": found}
    path = Path(config.sslrootcert)
    path = path if path.is_absolute() else base_dir / path
    if not path.is_file():
        raise ProvisionFailed(
            f"the DatabaseCaBundle file {config.sslrootcert} is not in the migrate function's code ({path})"
        )
    return {**security, "sslrootcert": str(path)}


def owner_params(
    secret: str, config: Config, scrub: Scrubber, security: Mapping[str, str]
) -> tuple[dict[str, str], str]:
    """libpq parameters from the owner secret: a postgresql:// URL (Neon: the direct one) or the
    RDS JSON form {"username", "password", "host", "port", "dbname"}; the function's own host,
    port and database name win (the RDS instance this stack made, whose managed secret has no
    host), and so does its TLS and authentication (`security`): a secret cannot weaken them.
    Returns the parameters and the secret's own sslmode (for the URLs the functions read)."""
    text = secret.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
            params = {"user": str(value["username"]), "password": str(value["password"])}
        except (ValueError, KeyError, TypeError):
            raise ProvisionFailed("the owner secret is JSON without a username and a password") from None
        for key, name in (("host", "host"), ("port", "port"), ("dbname", "dbname"), ("sslmode", "sslmode")):
            if value.get(key) not in (None, ""):
                params[name] = str(value[key])
    else:
        try:
            params = {k: str(v) for k, v in conninfo_to_dict(text).items() if v is not None}
        except psycopg.ProgrammingError:
            raise ProvisionFailed("the owner secret is neither a postgresql:// URL nor RDS JSON") from None
    scrub.add(params.get("password", ""))
    secret_sslmode = params.get("sslmode", "")
    for key in SECURITY_KEYS:
        params.pop(key, None)
    if config.host:
        params.pop("hostaddr", None)  # an address of the secret's own host, not of this one
    for key, override in (("host", config.host), ("port", config.port), ("dbname", config.dbname)):
        if override:
            params[key] = override
    if not params.get("host"):
        raise ProvisionFailed("the owner connection names no host")
    return {**params, **security}, secret_sslmode


def connect_failure(host: str, exc: BaseException, config: Config) -> str:
    reason = f"could not connect to the database owner's host {host}: {one_line(exc)}"
    if "certificate verify failed" in reason:
        where = f"DatabaseCaBundle {config.sslrootcert}" if config.sslrootcert else "the system CA store"
        reason += (
            f" (no CA in {where} signed its certificate; an RDS instance needs the RDS CA bundle as "
            "DatabaseCaBundle: docs/deploy.md)"
        )
    elif "server requested a" in reason:
        reason += (
            " (the owner must log in with SCRAM-SHA-256: set its password again with"
            " password_encryption = 'scram-sha-256')"
        )
    return reason


def owner_conninfo(params: dict[str, str], remaining_ms: int) -> str:
    """Bounded: a connect timeout, and no statement outliving the function's own time limit
    (a function killed mid-way could not answer, and the stack would wait)."""
    budget = max(remaining_ms - SAFETY_MARGIN_MS, 5_000)
    options = f"{params.get('options', '')} -c statement_timeout={budget}".strip()
    return make_conninfo("", **{**params, "connect_timeout": str(CONNECT_TIMEOUT_S), "options": options})


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
