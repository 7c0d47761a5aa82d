"""The Database custom resource (template.yaml, Custom::SessionVaultDatabase): on every deploy
that brings new code (a new shared-code layer version), inside the account, as the database
owner: apply pending migrations, give the three login roles their passwords from the stack's
role secrets, and write the connection URLs the functions read.

Create and Update do the same idempotent work: an Update with nothing pending applies nothing
and leaves the URL secrets' versions as they were (a value is written only when it changed).
Delete touches nothing: the database and its data outlive the stack.

The event is not trusted: anyone allowed to invoke the function can send one. Only an event
shaped like CloudFormation's, whose ResponseURL is CloudFormation's own response bucket in this
region, is acted on or answered; anything else is refused with no network call and no secret
read. What to connect to, which secrets to read and write, and how to verify the server come
from the function's own environment (template.yaml), never from the event: the Database
resource's properties carry the same values only so that changing one makes CloudFormation send
an Update, and an event whose properties differ from the environment is refused before any
secret is read (a rollback, whose previous properties differ, changes nothing and succeeds).
The owner connection verifies the server's certificate (verify-full: the system CAs, or the
DatabaseCaBundle file) and authenticates with SCRAM-SHA-256 only (require_auth), so the owner's
password never goes to a host that cannot prove itself, nor in clear.

CloudFormation waits for an answer (an HTTPS PUT to the event's ResponseURL), so every accepted
event is answered, failures included, with a reason meant for the stack events: it names what
failed and never holds a password or a URL with credentials (every secret read is scrubbed from
it). Only this function may read the owner secret; nothing in the serving path connects as the
owner.
"""

from __future__ import annotations

import json
import os
import re
import ssl
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from sessionvault.db import roles
from sessionvault.db.migrations import migrate
from sessionvault.errors import ProvisionFailed

PHYSICAL_ID = "sessionvault-database"  # stable: a new id would make CloudFormation delete the old
RESOURCE_TYPE = "Custom::SessionVaultDatabase"  # template.yaml's Database resource
REQUEST_TYPES = ("Create", "Update", "Delete")
REQUIRED_KEYS = ("StackId", "RequestId", "LogicalResourceId", "ResponseURL", "ResourceType")
CONNECT_TIMEOUT_S = 10
RESPONSE_TIMEOUT_S = 10
RESPONSE_ATTEMPTS = 3
REASON_MAX = 900  # the whole response body must stay under 4 KiB
SAFETY_MARGIN_MS = 30_000  # left to answer CloudFormation after the last statement

# The Database resource's properties and the migrate function's environment variables holding
# the same values (template.yaml sets both from the same expressions). The function reads only
# the environment.
SETTINGS = {
    "OwnerSecret": "SESSIONVAULT_OWNER_SECRET",
    "Host": "SESSIONVAULT_OWNER_HOST",  # the RDS instance the stack created (its secret has no host)
    "Port": "SESSIONVAULT_OWNER_PORT",
    "DbName": "SESSIONVAULT_OWNER_DBNAME",
    "PooledHost": "SESSIONVAULT_POOLED_HOST",  # the functions' host (Neon: -pooler); "" = the owner's
    "DatabaseCaBundle": "SESSIONVAULT_OWNER_SSLROOTCERT",  # "" = the system CAs
    "AppRoleSecret": "SESSIONVAULT_APP_ROLE_SECRET",
    "AdminRoleSecret": "SESSIONVAULT_ADMIN_ROLE_SECRET",
    "MaintRoleSecret": "SESSIONVAULT_MAINT_ROLE_SECRET",
    "AppDatabaseUrlSecret": "SESSIONVAULT_APP_DATABASE_URL_SECRET",
    "AdminDatabaseUrlSecret": "SESSIONVAULT_ADMIN_DATABASE_URL_SECRET",
    "MaintDatabaseUrlSecret": "SESSIONVAULT_MAINT_DATABASE_URL_SECRET",
}
SLOTS = (("App", roles.APP_ROLE), ("Admin", roles.ADMIN_ROLE), ("Maint", roles.MAINT_ROLE))
REQUIRED_SETTINGS = (
    "OwnerSecret",
    *(f"{slot}{kind}" for slot, _ in SLOTS for kind in ("RoleSecret", "DatabaseUrlSecret")),
)

# TLS to the owner's host: verify-full unless this says otherwise. The template sets require
# only for an RDS instance it created when no DatabaseCaBundle is given (the RDS CA is not a
# system CA); the tests set disable for their embedded server, which has no TLS.
SSLMODE_SETTING = "SESSIONVAULT_OWNER_SSLMODE"
SSLMODES = ("verify-full", "require", "disable")
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


@dataclass(frozen=True)
class Login:
    """A login role, the stack secret holding its password, the secret the functions read."""

    role: str
    role_secret: str
    url_secret: str


@dataclass(frozen=True)
class Config:
    """The migrate function's own configuration: its environment, as template.yaml sets it."""

    owner_secret: str
    host: str  # overrides the owner secret's host (the RDS instance the stack created)
    port: str
    dbname: str
    pooled_host: str
    logins: tuple[Login, ...]
    sslmode: str
    sslrootcert: str  # "" = the system CAs; else a PEM file, relative to the function's code
    values: dict[str, str] = field(default_factory=dict)  # property -> value, to compare events

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Config:
        values = {key: str(env.get(var) or "").strip() for key, var in SETTINGS.items()}
        for key in REQUIRED_SETTINGS:
            if not values[key]:
                raise ProvisionFailed(f"the migrate function is missing its {SETTINGS[key]} setting")
        sslmode = str(env.get(SSLMODE_SETTING) or "verify-full").strip()
        if sslmode not in SSLMODES:
            raise ProvisionFailed(f"{SSLMODE_SETTING} must be one of {', '.join(SSLMODES)}")
        logins = tuple(
            Login(role, values[f"{slot}RoleSecret"], values[f"{slot}DatabaseUrlSecret"])
            for slot, role in SLOTS
        )
        return cls(
            owner_secret=values["OwnerSecret"],
            host=values["Host"],
            port=values["Port"],
            dbname=values["DbName"],
            pooled_host=values["PooledHost"],
            logins=logins,
            sslmode=sslmode,
            sslrootcert=values["DatabaseCaBundle"],
            values=values,
        )

    def differing(self, props: Mapping[str, Any]) -> list[str]:
        """The properties of an event that are not this configuration (absent = empty)."""
        return [key for key in SETTINGS if str(props.get(key) or "").strip() != self.values[key]]


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


def login_url(role: str, password: str, host: str, port: str, dbname: str, sslmode: str) -> str:
    netloc_host = f"[{host}]" if ":" in host else host
    return (
        f"postgresql://{quote(role, safe='')}:{quote(password, safe='')}@{netloc_host}:{port}"
        f"/{quote(dbname, safe='')}?sslmode={quote(sslmode, safe='')}"
    )


# ---------------------------------------------------------------- the work


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


# ---------------------------------------------------------------- the custom resource protocol


# CloudFormation's presigned response URLs: its bucket cloudformation-custom-resource-response-
# <region without dashes> (AWS-owned), virtual-hosted (<bucket>.s3.amazonaws.com,
# <bucket>.s3.<region>.amazonaws.com, <bucket>.s3-<region>.amazonaws.com) or path-style
# (s3[.-<region>].amazonaws.com/<bucket>/...); .amazonaws.com.cn in the China regions.
RESPONSE_BUCKET = "cloudformation-custom-resource-response-"
S3_HOST = re.compile(
    r"(?:(?P<bucket>[a-z0-9-]+)\.)?s3(?:[.-](?P<region>[a-z]{2}(?:-[a-z]+)+-\d+))?"
    r"\.amazonaws\.com(?P<cn>\.cn)?"
)


def region_of(env: Mapping[str, str]) -> str:
    return str(env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "").strip()


def response_url_problem(url: str, region: str) -> str | None:
    """Why url is not CloudFormation's response URL for a stack in region; None when it is."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "the ResponseURL is not a URL"
    if parts.scheme != "https":
        return "the ResponseURL is not https"
    if parts.username is not None or parts.password is not None or port not in (None, 443):
        return "the ResponseURL names a user or a port"
    match = S3_HOST.fullmatch((parts.hostname or "").lower())
    if match is None:
        return "the ResponseURL is not on Amazon S3"
    bucket = match["bucket"]
    if bucket is None:  # path-style: the bucket is the first segment
        bucket, _, key = parts.path.lstrip("/").partition("/")
        if not key:
            return "the ResponseURL names no object"
    expected = RESPONSE_BUCKET + (region.replace("-", "") if region else "")
    if not (bucket == expected if region else re.fullmatch(re.escape(expected) + "[a-z0-9]+", bucket)):
        return f"the ResponseURL is not CloudFormation's response bucket{' for ' + region if region else ''}"
    if region and (match["region"] not in (None, region) or bool(match["cn"]) != region.startswith("cn-")):
        return f"the ResponseURL is not in {region}"
    return None


def event_problem(event: Any, region: str) -> str | None:
    """Why event is not a CloudFormation custom-resource request for this resource; None when it is."""
    if not isinstance(event, dict):
        return "the event is not a JSON object"
    if event.get("RequestType") not in REQUEST_TYPES:
        return "the event's RequestType is not Create, Update or Delete"
    for key in REQUIRED_KEYS:
        if not isinstance(event.get(key), str) or not event[key].strip():
            return f"the event has no {key}"
    if event["ResourceType"] != RESOURCE_TYPE:
        return f"the event's ResourceType is not {RESOURCE_TYPE}"
    for key in ("ResourceProperties", "OldResourceProperties"):
        if not isinstance(event.get(key, {}), dict):
            return f"the event's {key} is not an object"
    return response_url_problem(event["ResponseURL"], region)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """The answer goes to the presigned URL itself, never where a redirect points."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


OPENER = urllib.request.build_opener(_NoRedirect)


def put_response(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, method="PUT", headers=headers)
    with OPENER.open(request, timeout=RESPONSE_TIMEOUT_S) as answer:
        return int(answer.status)


def respond(event: dict[str, Any], status: str, reason: str, physical_id: str, data: dict[str, Any]) -> bool:
    """The answer CloudFormation waits for: a PUT of this JSON to the presigned ResponseURL,
    with an empty Content-Type (the signature covers it). Retried briefly on network errors."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:REASON_MAX],
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "NoEcho": False,
            "Data": data,
        }
    ).encode()
    headers = {"Content-Type": "", "Content-Length": str(len(body))}
    for attempt in range(RESPONSE_ATTEMPTS):
        try:
            if 200 <= put_response(event["ResponseURL"], body, headers) < 300:
                return True
        except Exception:  # retried, then logged by the caller
            pass
        if attempt + 1 < RESPONSE_ATTEMPTS:  # no wait after the last one
            time.sleep(0.5 * (attempt + 1))
    return False


def create_or_update(
    event: dict[str, Any],
    env: Mapping[str, str],
    base_dir: Path,
    remaining_ms: Callable[[], int],
    secrets: Callable[[], SecretsClient],
    scrub: Scrubber,
) -> tuple[str, dict[str, Any]]:
    """The reason and the data of a successful Create or Update; ProvisionFailed otherwise."""
    config = Config.from_env(env)
    props = event.get("ResourceProperties") or {}
    for key in REQUIRED_SETTINGS:
        if not str(props.get(key) or "").strip():
            raise ProvisionFailed(f"the Database resource is missing its {key} property")
    differing = config.differing(props)
    if differing:
        old = event.get("OldResourceProperties")
        if event["RequestType"] == "Update" and isinstance(old, dict) and not config.differing(old):
            return (
                "a rollback to the previous properties while the function has the newer "
                "configuration: nothing changed (the next deploy applies its own)"
            ), {}
        raise ProvisionFailed(
            f"refused: the event's {', '.join(differing)} differ from the migrate function's own "
            "configuration (template.yaml sets both; the function uses only its own)"
        )
    security = connection_security(config, base_dir)
    applied = provision(config, security, secrets(), scrub, remaining_ms())
    return f"database ready: {applied} migration(s) applied", {"Applied": applied}


def handle(
    event: Any,
    remaining_ms: Callable[[], int],
    secrets: Callable[[], SecretsClient],
    log: Any,
    *,
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> dict[str, Any]:
    """One custom-resource event. An event that is not CloudFormation's is refused, unanswered
    (its ResponseURL may be anyone's). Every other is answered whatever happens (even a client
    that cannot be made). Returns what was sent, minus the URL, for the function's log and
    return value. `base_dir`: the function's code, where a relative DatabaseCaBundle is."""
    env = os.environ if environ is None else environ
    problem = event_problem(event, region_of(env))
    request_type = str(event.get("RequestType", "")) if isinstance(event, dict) else ""
    if problem is not None:
        refused = {"request_type": request_type[:40], "status": "REFUSED", "reason": problem}
        log.error(
            "database resource: refused an event that is not CloudFormation's; no answer sent", extra=refused
        )
        return refused
    physical_id = str(event.get("PhysicalResourceId") or PHYSICAL_ID)
    scrub = Scrubber()
    status, data = "SUCCESS", dict[str, Any]()
    try:
        if request_type == "Delete":
            reason = "nothing dropped: the database and its data outlive the stack"
        else:
            reason, data = create_or_update(event, env, base_dir or Path.cwd(), remaining_ms, secrets, scrub)
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
