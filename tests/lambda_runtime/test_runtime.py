"""The four functions as Lambda runs them: the `sam build` output, zipped and extracted, in a
clean python3.12 (`-I -S -B`, only /var/task, /opt/python and the runtime on sys.path) driven
through awslambdaric by a local Runtime API (conftest.py, harness.py)."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import psycopg
import pytest

from ..support.cluster import running_cluster
from ..support.lambda_events import ROLES, SERVICE_TOKEN, SETTINGS, STACK_ID
from . import harness as h
from .conftest import APP_NAME, RESPONSE_HOST, Cloud, Credentials, ResponseBucket, Tools

pytestmark = [pytest.mark.timeout(900)]

# How long init takes is measured by benchmarks/coldstart.py (BENCHMARKS.md, "Lambda cold
# start"), not asserted here: a timed assertion passes or fails with the machine's load. What
# makes init slow is pinned exactly instead: boto3 and friends at init, modules compiled from
# source at init (a layer without usable bytecode).
NEVER_AT_INIT = ("boto3", "botocore", "s3transfer", "urllib3", "mcp.client", "mcp.server.mcpserver.server")
NEVER_AT_INIT += ("mcp.server.apps", "httpx2", "uvicorn", "click")  # issue 29 item 4: ~100 ms of CPU
INITIALIZE = h.rpc(
    "initialize",
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tier", "version": "1"}},
)


def tool(tool_name: str, **arguments: Any) -> str:
    return h.rpc("tools/call", {"name": tool_name, "arguments": arguments})


def new_key(start: Any) -> tuple[str, str]:
    """A user and a read/write key, made by the admin function in its own environment."""
    with start("AdminFunction") as admin:
        admin.wait_init()
        name = f"tier-{secrets.token_hex(4)}"
        user = admin.invoke({"action": "create_user", "name": name})
        assert user["ok"], user
        key = admin.invoke({"action": "create_key", "user_id": user["user_id"], "label": "tier"})
        assert key["ok"] and key["key"].startswith("sv_live_"), key
        listed = admin.invoke({"action": "list_keys", "user": name})
        assert [k["label"] for k in listed["keys"]] == ["tier"] and key["key"] not in json.dumps(listed)
        return str(user["user_id"]), str(key["key"])


ROUND = ("initialize", "tools/list", "save_session", "load_session")


def mcp_round(mcp: h.Environment, key: str, session: str, took: list[float] | None = None) -> list[Any]:
    """initialize, tools/list, save_session, load_session: each one invocation (its wall time,
    in ms, appended to `took`)."""
    bodies_in = [
        INITIALIZE,
        h.rpc("tools/list"),
        tool("save_session", name=session, summary="from the runtime"),
        tool("load_session", name=session),
    ]
    answers = []
    for body in bodies_in:
        started = time.monotonic()
        answers.append(mcp.invoke(h.http_event(body, key=key)))
        if took is not None:
            took.append((time.monotonic() - started) * 1000)
    assert [a["statusCode"] for a in answers] == [200] * 4, answers
    bodies = [h.body_json(a) for a in answers]
    assert bodies[0]["result"]["serverInfo"]["name"] == "sessionvault"
    assert {t["name"] for t in bodies[1]["result"]["tools"]} >= {"save_session", "load_session"}
    loaded = bodies[3]["result"]["structuredContent"]
    assert (loaded["name"], loaded["summary"]) == (session, "from the runtime")
    return bodies


def app_connections(pg: Any) -> int:
    """The MCP function's live connections (its URL names APP_NAME as application_name)."""
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (APP_NAME,)
        ).fetchone()
    return int(row[0]) if row else 0


def wait_for(predicate: Any, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


# ---------------------------------------------------------------- the artifacts


def test_the_artifacts_fit_lambda_and_need_no_newer_glibc_than_amazon_linux_2023(built, tools: Tools, capsys):
    report, newest, too_new = h.shared_objects_report(built, tools.objdump)
    with capsys.disabled():
        print("\n" + report)
    for function in h.FUNCTIONS:
        total = sum(built.unzipped_bytes(p) for p in (function, *built.layers_of(function)))
        assert total < h.UNZIPPED_LIMIT, f"{function}: {total / 1e6:.0f} MB unzipped"
    assert newest >= (2, 17), "no shared object needs glibc: objdump read nothing"
    assert not too_new, f"need a glibc newer than {h.RUNTIME_GLIBC}: {too_new}"


def _pyc_flags(pyc: Path) -> int:
    return int.from_bytes(pyc.read_bytes()[4:8], "little")


def test_both_layers_ship_unchecked_hash_bytecode_for_every_module(built):
    layout = built.layout("McpFunction")
    sources = [p for p in layout.opt_python.rglob("*.py") if "__pycache__" not in p.parts]
    missing, not_unchecked = [], []
    for source in sources:
        pyc = source.parent / "__pycache__" / f"{source.stem}.cpython-312.pyc"
        if not pyc.exists():
            missing.append(source)
        elif _pyc_flags(pyc) != 0b01:  # hash-based, check_source off (PEP 552)
            not_unchecked.append(pyc)
    assert len(sources) > 1000
    assert not missing, f"{len(missing)} modules without bytecode, e.g. {missing[:3]}"
    assert not not_unchecked, f"not unchecked-hash: {not_unchecked[:3]}"
    # What `sam deploy` uploads: every entry stamped 1980-01-01, whatever the build's mtimes.
    stamps = {os.stat(p).st_mtime for p in sources[:50]}
    assert max(stamps) < time.mktime((1980, 1, 2, 0, 0, 0, 0, 0, -1))


def test_timestamp_bytecode_does_not_survive_sams_zip_and_hash_based_does(tools: Tools, tmp_path: Path):
    """Why the layers ship hash-based .pyc: after SAM's zip (and any extraction that restores
    the entries' 1980 timestamps, or one that stamps the extraction time) a timestamp .pyc names
    another mtime than its source's and Python recompiles, on every cold start (/opt is
    read-only); a hash-based one is used as it is."""
    source = tmp_path / "src"
    for mode in ("timestamp", "checked-hash", "unchecked-hash"):
        package = source / f"m_{mode.replace('-', '_')}"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("VALUE = 42\n")
        subprocess.run(
            [tools.python, "-m", "compileall", "-q", "--invalidation-mode", mode, str(package)], check=True
        )
    archive = h.sam_zip(tools.sam, source, tmp_path / "layer")
    opt = tmp_path / "opt"
    h.extract(archive, opt)
    code = "import sys; sys.path.insert(0, sys.argv[1]); import m_timestamp, m_checked_hash, m_unchecked_hash"
    out = subprocess.run(
        [tools.python, "-I", "-S", "-B", "-v", "-c", code, str(opt)],
        capture_output=True,
        text=True,
        check=True,
    )
    compiled = set(re.findall(r"# code object from (\S+)/__init__\.py\n", out.stderr))
    loaded = set(re.findall(r"# code object from '(\S+)/__pycache__/__init__\.cpython-312\.pyc'", out.stderr))
    assert {Path(p).name for p in compiled if p.startswith(str(opt))} == {"m_timestamp"}
    assert {Path(p).name for p in loaded if p.startswith(str(opt))} == {"m_checked_hash", "m_unchecked_hash"}
    assert "bytecode is stale for 'm_timestamp'" in out.stderr


# ---------------------------------------------------------------- init


def test_mcp_init_loads_only_bytecode_and_imports_neither_boto3_nor_the_mcp_client(start, capsys):
    with start("McpFunction", flags=("-X", "importtime", "-v")) as mcp:
        mcp.wait_init()
        output = mcp.output()
    modules = h.imported_modules(output)
    assert "sessionvault.server.app" in modules and "awslambdaric.bootstrap" in modules
    assert not [m for m in NEVER_AT_INIT if m in modules], sorted(m for m in NEVER_AT_INIT if m in modules)
    opt = str(mcp.layout.opt_python)
    sources = re.findall(r"# code object from (/\S+\.py)$", output, flags=re.M)
    compiled = [p for p in sources if p.startswith(opt)]
    from_pyc = [p for p in re.findall(r"# code object from '(/\S+\.pyc)'", output) if p.startswith(opt)]
    assert not compiled, f"compiled from source at init: {compiled[:5]}"
    cost = h.importtime_by_package(output)
    top = sorted(cost.items(), key=lambda kv: -kv[1])[:10]
    with capsys.disabled():
        print(
            f"\nMCP init: {len(modules)} modules, {len(from_pyc)} from the layers' bytecode, none compiled;"
            " -X importtime self time by package (ms): "
            + ", ".join(f"{name} {us / 1000:.0f}" for name, us in top)
        )


def test_a_function_that_cannot_start_reports_an_init_error(start):
    mcp = start("McpFunction", SESSIONVAULT_AUDIT_SALT_SECRET="sv/no-such-secret")
    with mcp, pytest.raises(h.InitFailed) as failed:
        mcp.wait_init()
    error_type, body = failed.value.error
    assert error_type == "ConfigError", failed.value  # /init/error, then the runtime exits
    assert b"refusing to serve: 1 configuration problem" in body
    assert "the secret could not be read (ResourceNotFoundException)" in failed.value.output


# ---------------------------------------------------------------- the functions


def test_admin_makes_a_user_and_a_key_and_the_mcp_function_serves_them(start, capsys):
    _, key = new_key(start)
    with start("McpFunction") as mcp:
        init_ms = mcp.wait_init()
        took: list[float] = []
        mcp_round(mcp, key, f"tier/{secrets.token_hex(3)}", took)
        refused = mcp.invoke(h.http_event(h.rpc("tools/list"), key="sv_live_" + "x" * 40))
        assert refused["statusCode"] == 401
        health = mcp.invoke(h.http_event("", path="/health", method="GET"))
        assert health["statusCode"] == 200
    with capsys.disabled():
        print(
            f"\nMCP on demand: init {init_ms:.0f} ms, then "
            + ", ".join(f"{n} {t:.0f} ms" for n, t in zip(ROUND, took, strict=True))
            + " (the first save unwraps the data key: boto3 and the KMS client, made then)"
        )


def test_maintenance_prunes_in_the_runtime(start):
    with start("MaintenanceFunction") as maint:
        maint.wait_init()
        for task in ("prune_rate_limits", "prune_audit", "prune_oauth"):
            answer = maint.invoke({"task": task})
            counts = {k: v for k, v in answer.items() if k != "task"}
            assert answer["task"] == task and counts, answer
            assert all(isinstance(v, int) and v >= 0 for v in counts.values()), answer
        with pytest.raises(h.InvokeFailed) as failed:
            maint.invoke({"task": "drop_everything"})
        assert "unknown task" in json.dumps(failed.value.error)


# ---------------------------------------------------------------- SnapStart


def test_snapstart_with_the_real_snapshot_restore_py(start, pg, container_credentials: Credentials, capsys):
    """AWS_LAMBDA_INITIALIZATION_TYPE=snap-start: awslambdaric runs init, the before-snapshot
    hook, asks /restore/next (the snapshot is taken here), then the after-restore hook. The
    credentials come from the container endpoint, as Lambda gives them to SnapStart functions."""
    _, key = new_key(start)
    container_credentials.calls.clear()
    snap = start(
        "McpFunction",
        drop=("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"),
        AWS_LAMBDA_INITIALIZATION_TYPE="snap-start",
        AWS_CONTAINER_CREDENTIALS_FULL_URI=container_credentials.uri,
        AWS_CONTAINER_AUTHORIZATION_TOKEN=container_credentials.token,
    )
    with snap:
        snapshot_ms = snap.wait_snapshot()
        assert container_credentials.calls == [container_credentials.token] * 2  # the two secrets
        assert wait_for(lambda: app_connections(pg) == 0), "a database connection went into the snapshot"
        restore_ms = snap.restore()
        took: list[float] = []
        mcp_round(snap, key, f"snap/{secrets.token_hex(3)}", took)  # unwraps the data key: KMS after restore
        assert app_connections(pg) >= 1
        assert len(container_credentials.calls) >= 3  # the KMS client, made after the restore
        with capsys.disabled():
            print(
                f"\nSnapStart: init + before-snapshot hook {snapshot_ms:.0f} ms; after-restore hook"
                f" {restore_ms:.0f} ms; then "
                + ", ".join(f"{n} {t:.0f} ms" for n, t in zip(ROUND, took, strict=True))
            )


# ---------------------------------------------------------------- migrate (the Database custom resource)


@pytest.fixture(scope="module")
def cluster(tools: Tools) -> Any:
    with running_cluster("sv-tier-migrate-") as db:
        yield db


def cfn_event(request_type: str, props: dict[str, str], **extra: Any) -> dict[str, Any]:
    key = quote(f"{STACK_ID}|Database|{uuid.uuid4()}", safe="")
    return {
        "RequestType": request_type,
        "ServiceToken": SERVICE_TOKEN,
        "ResponseURL": f"https://{RESPONSE_HOST}/{key}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc",
        "StackId": STACK_ID,
        "RequestId": str(uuid.uuid4()),
        "LogicalResourceId": "Database",
        "ResourceType": "Custom::SessionVaultDatabase",
        "ResourceProperties": {"ServiceToken": SERVICE_TOKEN, **props},
        **extra,
    }


def test_migrate_create_update_delete_answer_cloudformation(
    start, cloud: Cloud, cluster: Any, response_bucket: ResponseBucket
):
    dbname = cluster.fresh_database()
    tag = secrets.token_hex(3)
    props = {
        "OwnerSecret": cloud.secret(f"sv-{tag}/owner", cluster.owner_url(dbname)),
        "Host": "",
        "Port": "",
        "DbName": "",
        "PooledHost": "",
        "DatabaseCaBundle": "",
    }
    for slot, role in ROLES.items():
        password = secrets.token_urlsafe(30)
        props[f"{slot}RoleSecret"] = cloud.secret(
            f"sv-{tag}/{role}", json.dumps({"username": role, "password": password})
        )
        props[f"{slot}DatabaseUrlSecret"] = cloud.secret(
            f"sv-{tag}/{role}-url", "placeholder: written on deploy"
        )
    env = {var: props[key] for key, var in SETTINGS.items()}
    env.update(
        SESSIONVAULT_OWNER_SSLMODE="disable",  # the embedded cluster has no TLS (as in tests/lambda)
        HTTPS_PROXY=response_bucket.proxy,
        NO_PROXY="127.0.0.1,localhost",
        SSL_CERT_FILE=str(response_bucket.ca_file),
    )
    props["CodeVersion"] = "arn:aws:lambda:us-east-1:123456789012:layer:sv-shared:1"
    with start("MigrateFunction", **env) as migrate:
        migrate.wait_init()
        migrate.invoke(cfn_event("Create", props))
        created = response_bucket.last()
        assert created["Status"] == "SUCCESS", created["Reason"]
        assert created["PhysicalResourceId"] == "sessionvault-database" and created["Data"]["Applied"] > 0
        put = response_bucket.received[-1]
        assert put["method"] == "PUT" and put["path"].startswith(f"/{quote(STACK_ID, safe='')}")
        assert put["headers"].get("Content-Type") == ""
        app_url = cloud.client("secretsmanager").get_secret_value(SecretId=props["AppDatabaseUrlSecret"])
        parts = urlsplit(app_url["SecretString"])
        assert (parts.username, parts.port, parts.path) == ("sessionvault_app", cluster.port, f"/{dbname}")

        newer = {**props, "CodeVersion": props["CodeVersion"].replace(":1", ":2")}
        migrate.invoke(
            cfn_event(
                "Update", newer, OldResourceProperties=props, PhysicalResourceId="sessionvault-database"
            )
        )
        updated = response_bucket.last()
        assert (updated["Status"], updated["Data"]) == ("SUCCESS", {"Applied": 0})

        migrate.invoke(cfn_event("Delete", props, PhysicalResourceId="sessionvault-database"))
        assert response_bucket.last()["Status"] == "SUCCESS"
    assert len(response_bucket.received) == 3
    assert set(response_bucket.tunnels) == {f"{RESPONSE_HOST}:443"}  # only ever CloudFormation's bucket


# ---------------------------------------------------------------- the light Secrets Manager client


def test_the_secret_request_is_signed_exactly_as_botocore_signs_it():
    """aws_signing.sigv4_headers against botocore's SigV4Auth, same request, same instant."""
    import calendar

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    from sessionvault.aws_signing import AwsCredentials, sigv4_headers

    body = json.dumps(
        {"SecretId": "arn:aws:secretsmanager:us-east-1:123456789012:secret:sv/x-AbCdEf"}
    ).encode()
    headers = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "secretsmanager.GetSecretValue"}
    for url, token in (
        ("https://secretsmanager.us-east-1.amazonaws.com/", "session-token"),
        ("https://secretsmanager.eu-west-1.amazonaws.com", ""),
        ("http://127.0.0.1:5123", "a  token with spaces"),
    ):
        region = url.split(".")[1] if "amazonaws" in url else "us-east-1"
        request = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
        boto_credentials = BotoCredentials("AKIDEXAMPLE", "secret", token or None)
        SigV4Auth(boto_credentials, "secretsmanager", region).add_auth(request)
        now = calendar.timegm(time.strptime(request.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ"))
        mine = sigv4_headers(
            "POST",
            url,
            headers,
            body,
            region,
            "secretsmanager",
            AwsCredentials("AKIDEXAMPLE", "secret", token),
            now,
        )
        assert mine["Authorization"] == request.headers["Authorization"], url
        assert {k: v for k, v in mine.items() if k != "Host"} == dict(request.headers.items())
