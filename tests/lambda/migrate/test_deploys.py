"""Create, Update and Delete as CloudFormation sends them: a fresh database migrated and each role's
new password working, nothing re-applied or rewritten on an update with nothing pending, the
migrations added since the last deploy applied, Delete touching nothing; and the failures
answered with a readable reason and no secret."""

from __future__ import annotations

import json
import secrets
from urllib.parse import quote, urlsplit

import psycopg
import pytest

from sessionvault.db.migrations import migration_files, migrations_dir

from ...conftest import free_port
from ...support.lambda_events import (
    RESPONSE_HOST,
    ROLES,
    STACK_ID,
)
from .conftest import (
    PLACEHOLDER,
    ResponseUrl,
    Stack,
    connect_as,
    event,
    run,
)

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
    stack.set_owner(cluster.owner_url("sessionvault", port=free_port()))  # nothing listens there
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
