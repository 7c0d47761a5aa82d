"""The Database custom resource (template.yaml, Custom::SessionVaultDatabase): on every deploy
that brings new code (a new shared-code layer version), inside the account, as the database
owner: apply pending migrations, give the three login roles their passwords from the stack's
role secrets, and write the connection URLs the functions read.

Create and Update do the same idempotent work: an Update with nothing pending applies nothing
and leaves the URL secrets' versions as they were (a value is written only when it changed).
Delete touches nothing: the database and its data outlive the stack.

CloudFormation waits for an answer (an HTTPS PUT to the event's ResponseURL), so every path
answers, failures included, with a reason meant for the stack events: it names what failed
and never holds a password or a URL with credentials (every secret read is scrubbed from it).
Only this function may read the owner secret; nothing in the serving path connects as the owner.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from sessionvault.db import roles
from sessionvault.db.migrations import migrate
from sessionvault.errors import ProvisionFailed

PHYSICAL_ID = "sessionvault-database"  # stable: a new id would make CloudFormation delete the old
CONNECT_TIMEOUT_S = 10
RESPONSE_TIMEOUT_S = 10
RESPONSE_ATTEMPTS = 3
REASON_MAX = 900  # the whole response body must stay under 4 KiB
SAFETY_MARGIN_MS = 30_000  # left to answer CloudFormation after the last statement


@dataclass(frozen=True)
class Login:
    """A login role, the stack secret holding its password, the secret the functions read."""

    role: str
    role_secret: str
    url_secret: str


@dataclass(frozen=True)
class Properties:
    owner_secret: str
    host: str  # overrides: the RDS instance the stack created (its secret holds no host)
    port: str
    dbname: str
    pooled_host: str  # the functions' host (Neon: the -pooler one); empty = the owner's
    logins: tuple[Login, ...]

    @classmethod
    def from_event(cls, props: dict[str, Any]) -> Properties:
        def need(key: str) -> str:
            value = str(props.get(key) or "").strip()
            if not value:
                raise ProvisionFailed(f"the Database resource is missing its {key} property")
            return value

        def opt(key: str) -> str:
            return str(props.get(key) or "").strip()

        slots = (("App", roles.APP_ROLE), ("Admin", roles.ADMIN_ROLE), ("Maint", roles.MAINT_ROLE))
        logins = tuple(
            Login(role, need(f"{slot}RoleSecret"), need(f"{slot}DatabaseUrlSecret")) for slot, role in slots
        )
        return cls(need("OwnerSecret"), opt("Host"), opt("Port"), opt("DbName"), opt("PooledHost"), logins)


@dataclass
class Scrubber:
    """Every secret value read during a request, taken out of any text before it leaves."""

    values: set[str] = field(default_factory=set)

    def add(self, value: str) -> str:
        if value:
            self.values.add(value)
        return value

    def __call__(self, text: str) -> str:
        for value in sorted(self.values, key=len, reverse=True):
            text = text.replace(value, "[REDACTED]")
        text = re.sub(r"(://[^:/@\s]*:)[^@\s]+@", r"\1[REDACTED]@", text)  # user:password@
        return re.sub(r"(?i)(password\s*=\s*)\S+", r"\1[REDACTED]", text)


# ---------------------------------------------------------------- secrets


SecretsClient = Any  # a boto3 Secrets Manager client (boto3 ships no type stubs here)


def error_code(exc: BaseException) -> str:
    """botocore's errors carry a code: keep it, not the whole message."""
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code") or type(exc).__name__)


def read_secret(client: SecretsClient, secret_id: str, what: str, scrub: Scrubber) -> str:
    try:
        value = client.get_secret_value(SecretId=secret_id)["SecretString"]
    except Exception as exc:
        raise ProvisionFailed(f"could not read {what} {secret_id} ({error_code(exc)})") from None
    return scrub.add(str(value))


def read_login_password(client: SecretsClient, login: Login, scrub: Scrubber) -> str:
    """The role secret is {"username": <role>, "password": ...} (GenerateSecretString)."""
    raw = read_secret(client, login.role_secret, f"the {login.role} password secret", scrub)
    try:
        value = json.loads(raw)
        username, password = str(value["username"]), str(value["password"])
    except (ValueError, KeyError, TypeError):
        raise ProvisionFailed(f"the secret {login.role_secret} is not {{username, password}} JSON") from None
    if username != login.role:
        raise ProvisionFailed(f"the secret {login.role_secret} is for {username!r}, expected {login.role}")
    return scrub.add(password)


def write_if_changed(client: SecretsClient, secret_id: str, value: str) -> bool:
    """PutSecretValue only when the value differs, so a no-op deploy adds no secret version."""
    current = client.get_secret_value(SecretId=secret_id)["SecretString"]
    if current == value:
        return False
    client.put_secret_value(SecretId=secret_id, SecretString=value)
    return True


# ---------------------------------------------------------------- connections


def owner_params(secret: str, props: Properties, scrub: Scrubber) -> dict[str, str]:
    """libpq parameters from the owner secret: a postgresql:// URL (Neon: the direct one) or the
    RDS JSON form {"username", "password", "host", "port", "dbname"}; the Host/Port/DbName
    properties win (the RDS instance this stack made, whose managed secret has no host).
    Without an sslmode of its own, libpq's PGSSLMODE applies (the template sets require)."""
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
    for key, override in (("host", props.host), ("port", props.port), ("dbname", props.dbname)):
        if override:
            params[key] = override
    if not params.get("host"):
        raise ProvisionFailed("the owner connection names no host")
    return params


def owner_conninfo(params: dict[str, str], remaining_ms: int) -> str:
    """Bounded: a connect timeout, and no statement outliving the function's own time limit
    (a function killed mid-way could not answer, and the stack would wait)."""
    budget = max(remaining_ms - SAFETY_MARGIN_MS, 5_000)
    options = f"{params.get('options', '')} -c statement_timeout={budget}".strip()
    return make_conninfo("", **{**params, "connect_timeout": str(CONNECT_TIMEOUT_S), "options": options})


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def login_url(role: str, password: str, host: str, port: str, dbname: str, sslmode: str) -> str:
    netloc_host = f"[{host}]" if ":" in host else host
    return (
        f"postgresql://{quote(role, safe='')}:{quote(password, safe='')}@{netloc_host}:{port}"
        f"/{quote(dbname, safe='')}?sslmode={quote(sslmode, safe='')}"
    )


# ---------------------------------------------------------------- the work


def provision(props: Properties, client: SecretsClient, scrub: Scrubber, remaining_ms: int) -> int:
    """Migrate, set the roles' passwords, write the URL secrets; returns the migrations applied."""
    params = owner_params(read_secret(client, props.owner_secret, "the owner secret", scrub), props, scrub)
    passwords = {login.role: read_login_password(client, login, scrub) for login in props.logins}
    conninfo = owner_conninfo(params, remaining_ms)
    host = params["host"]
    try:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            port, dbname = str(conn.info.port), conn.info.dbname
    except psycopg.Error as exc:
        reason = f"could not connect to the database owner's host {host}: {one_line(exc)}"
        raise ProvisionFailed(reason) from None
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
    sslmode = params.get("sslmode") or "require"  # the owner URL's own choice, else TLS
    for login in props.logins:
        url = login_url(login.role, passwords[login.role], props.pooled_host or host, port, dbname, sslmode)
        try:
            write_if_changed(client, login.url_secret, url)
        except Exception as exc:
            reason = f"could not write the secret {login.url_secret} ({error_code(exc)})"
            raise ProvisionFailed(reason) from None
    return len(applied)


# ---------------------------------------------------------------- the custom resource protocol


def respond(event: dict[str, Any], status: str, reason: str, physical_id: str, data: dict[str, Any]) -> bool:
    """The answer CloudFormation waits for: a PUT of this JSON to the presigned ResponseURL,
    with an empty Content-Type (the signature covers it). Retried briefly on network errors."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:REASON_MAX],
            "PhysicalResourceId": physical_id,
            "StackId": event.get("StackId", ""),
            "RequestId": event.get("RequestId", ""),
            "LogicalResourceId": event.get("LogicalResourceId", ""),
            "NoEcho": False,
            "Data": data,
        }
    ).encode()
    headers = {"Content-Type": "", "Content-Length": str(len(body))}
    for attempt in range(RESPONSE_ATTEMPTS):
        request = urllib.request.Request(event["ResponseURL"], data=body, method="PUT", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=RESPONSE_TIMEOUT_S) as answer:
                if 200 <= answer.status < 300:
                    return True
        except Exception:  # retried, then logged by the caller
            pass
        if attempt + 1 < RESPONSE_ATTEMPTS:  # no wait after the last one
            time.sleep(0.5 * (attempt + 1))
    return False


def handle(
    event: dict[str, Any],
    remaining_ms: Callable[[], int],
    secrets: Callable[[], SecretsClient],
    log: Any,
) -> dict[str, Any]:
    """One custom-resource event, answered whatever happens (even a client that cannot be
    made). Returns what was sent, minus the URL, for the function's log and return value."""
    request_type = str(event.get("RequestType", ""))
    physical_id = str(event.get("PhysicalResourceId") or PHYSICAL_ID)
    scrub = Scrubber()
    status, data = "SUCCESS", {}
    try:
        if request_type in ("Create", "Update"):
            props = Properties.from_event(event.get("ResourceProperties") or {})
            applied = provision(props, secrets(), scrub, remaining_ms())
            data = {"Applied": applied}
            reason = f"database ready: {applied} migration(s) applied"
        elif request_type == "Delete":
            reason = "nothing dropped: the database and its data outlive the stack"
        else:
            raise ProvisionFailed(f"unknown RequestType {request_type!r}")
    except ProvisionFailed as exc:
        status, reason = "FAILED", str(exc)
    except Exception as exc:  # an answer must go back whatever broke
        status, reason = "FAILED", f"unexpected {type(exc).__name__}: {one_line(exc)}"
    reason = scrub(reason)
    outcome = {"request_type": request_type, "status": status, "reason": reason, **data}
    if not respond(event, status, reason, physical_id, data):
        log.error("database resource: the answer to CloudFormation could not be sent", extra=outcome)
    elif status == "FAILED":
        log.error("database resource", extra=outcome)
    else:
        log.info("database resource", extra=outcome)
    return outcome
