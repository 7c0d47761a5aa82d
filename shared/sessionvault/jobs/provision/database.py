"""The migrate function's database work, as the owner: apply the pending migrations, give the
three login roles their passwords from the stack's role secrets, and write the connection URLs
the functions read (through the pooled host when there is one). Idempotent: with nothing
pending and no password changed, it applies nothing and writes no secret."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

import psycopg

from sessionvault.db import roles
from sessionvault.db.migrations import migrate
from sessionvault.errors import ProvisionFailed
from sessionvault.jobs.provision.config import Config
from sessionvault.jobs.provision.owner_connection import (
    connect_failure,
    one_line,
    owner_conninfo,
    owner_params,
)
from sessionvault.jobs.provision.secrets import (
    Scrubber,
    SecretsClient,
    error_code,
    read_login_password,
    read_secret,
    write_if_changed,
)


def login_url(role: str, password: str, host: str, port: str, dbname: str, sslmode: str) -> str:
    netloc_host = f"[{host}]" if ":" in host else host
    return (
        f"postgresql://{quote(role, safe='')}:{quote(password, safe='')}@{netloc_host}:{port}"
        f"/{quote(dbname, safe='')}?sslmode={quote(sslmode, safe='')}"
    )


def login_sslmode(secret_sslmode: str) -> str:
    """The functions' URLs: the owner secret's own TLS choice when it is at least require."""
    return secret_sslmode if secret_sslmode in ("require", "verify-ca", "verify-full") else "require"


def provision(
    config: Config, security: Mapping[str, str], client: SecretsClient, scrub: Scrubber, remaining_ms: int
) -> int:
    """Migrate, set the roles' passwords, write the URL secrets; returns the migrations applied."""
    secret = read_secret(client, config.owner_secret, "the owner secret", scrub)
    params, secret_sslmode = owner_params(secret, config, scrub, security)
    passwords = {login.role: read_login_password(client, login, scrub) for login in config.logins}
    conninfo = owner_conninfo(params, remaining_ms)
    host = params["host"]
    try:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            port, dbname = str(conn.info.port), conn.info.dbname
    except psycopg.Error as exc:
        raise ProvisionFailed(connect_failure(host, exc, config)) from None
    try:
        applied = migrate(conninfo)
    except Exception as exc:
        raise ProvisionFailed(f"the migrations failed on {host}/{dbname}: {one_line(exc)}") from None
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for role, password in passwords.items():
            try:
                roles.set_login_password(conn, role, password)
            except psycopg.Error as exc:
                raise ProvisionFailed(f"could not set the password of {role}: {one_line(exc)}") from None
    sslmode = login_sslmode(secret_sslmode)
    for login in config.logins:
        url = login_url(login.role, passwords[login.role], config.pooled_host or host, port, dbname, sslmode)
        try:
            write_if_changed(client, login.url_secret, url)
        except Exception as exc:
            reason = f"could not write the secret {login.url_secret} ({error_code(exc)})"
            raise ProvisionFailed(reason) from None
    return len(applied)
