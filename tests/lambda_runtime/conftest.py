"""The Lambda-runtime tier: the `sam build` output run the way Lambda runs it (harness.py).

Prerequisites: the SAM CLI ($SAM_CLI, which `make test` sets), a working python3.12 (the
template's Runtime: on PATH or from pyenv), pip access to PyPI once (awslambdaric and
snapshot-restore-py, cached under .venv/lambda-runtime/), objdump (binutils), moto's server mode
(moto[server]: flask) and the embedded PostgreSQL of tests/conftest.py. Locally a missing one
skips the tier, naming it; in CI ($CI set) or with SESSIONVAULT_REQUIRE_LAMBDA_RUNTIME=1 it fails.

Around the runtime processes: KMS and Secrets Manager from a moto server (ThreadedMotoServer)
that every function reaches through AWS_ENDPOINT_URL, the real database through the URLs the
secrets hold, a container-credentials endpoint (SnapStart's credentials), and for the migrate
function CloudFormation's response bucket: its HTTPS PUT goes through an HTTPS proxy
(HTTPS_PROXY) that terminates TLS with a certificate for the bucket's host from a local CA the
function trusts (SSL_CERT_FILE) and records the answer."""

from __future__ import annotations

import datetime
import http.server
import importlib
import json
import secrets
import shutil
import socket
import ssl
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..support.lambda_events import RESPONSE_HOST, CloudFormationAnswers
from ..support.pki import Authority
from . import harness as h

REGION = "us-east-1"
CACHE = h.ROOT / ".venv" / "lambda-runtime"


def _missing(reason: str) -> None:
    if h.required():
        pytest.fail(f"{reason} ({h.REQUIRE_ENV}=1 or CI: the Lambda-runtime tier must run)")
    pytest.skip(reason)


@dataclass(frozen=True)
class Tools:
    sam: str
    python: str
    objdump: str


@pytest.fixture(scope="session")
def tools() -> Tools:
    try:
        template = h.load_template(h.TEMPLATE)
        python = h.find_python(h.runtime_of(template))
        found = Tools(h.find_sam(), python, h.find_tool("objdump"))
        importlib.import_module("moto.server")  # moto[server]: flask, flask-cors
    except h.Missing as exc:
        _missing(str(exc))
    except ImportError as exc:
        _missing(f"moto's server mode is missing ({exc.name}): pip install 'moto[server]'")
    return found


@pytest.fixture(scope="session")
def built(tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> h.Built:
    """sam build into a temporary folder, every artifact zipped as `sam deploy` would, the
    runtime (awslambdaric, snapshot_restore_py) installed once per pins."""
    root = tmp_path_factory.mktemp("lambda-runtime")
    try:
        runtime = h.install_runtime(tools.python, CACHE)
    except h.Missing as exc:
        _missing(str(exc))
    build_dir = h.sam_build(tools.sam, tools.python, root / "build")
    return h.package(tools.sam, build_dir, tools.python, runtime, root / "lambda")


# ---------------------------------------------------------------- AWS: a moto server


@dataclass
class Cloud:
    endpoint: str
    kms_key: str
    secrets: dict[str, str]  # name -> ARN
    client: Any  # boto3 factory: client(service)

    def secret(self, name: str, value: str) -> str:
        sm = self.client("secretsmanager")
        if name in self.secrets:
            sm.put_secret_value(SecretId=self.secrets[name], SecretString=value)
        else:
            self.secrets[name] = sm.create_secret(Name=name, SecretString=value)["ARN"]
        return self.secrets[name]


@pytest.fixture(scope="session")
def cloud(tools: Tools) -> Iterator[Cloud]:
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"

    def client(service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    key = client("kms").create_key(Description="sessionvault")["KeyMetadata"]["Arn"]
    yield Cloud(endpoint, key, {}, client)
    server.stop()


@dataclass
class Credentials:
    """Lambda's container credentials endpoint (how a SnapStart function gets its role's)."""

    uri: str
    token: str
    calls: list[str] = field(default_factory=list)  # the Authorization header of each call


@pytest.fixture(scope="session")
def container_credentials() -> Iterator[Credentials]:
    token = secrets.token_urlsafe(16)
    record = Credentials("", token)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            record.calls.append(self.headers.get("Authorization", ""))
            if self.headers.get("Authorization") != token:
                self.send_response(403)
                self.end_headers()
                return
            expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
            body = json.dumps(
                {
                    "AccessKeyId": "ASIACONTAINER",
                    "SecretAccessKey": "container-secret",
                    "Token": "container-token",
                    "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    record.uri = f"http://127.0.0.1:{server.server_address[1]}/2018-06-01/credentials"
    yield record
    server.shutdown()
    server.server_close()


# ---------------------------------------------------------------- the functions' environments


APP_NAME = f"sv-lambda-runtime-{secrets.token_hex(4)}"  # the MCP function's connections, in pg_stat_activity


@pytest.fixture(scope="session")
def stack(cloud: Cloud, pg: Any) -> dict[str, str]:
    """The stack's secrets (as the Database resource leaves them) and the template's values."""
    salt = cloud.secret("sv/audit-salt", secrets.token_urlsafe(32))
    return {
        "SESSIONVAULT_KMS_KEY_ID": cloud.kms_key,
        "SESSIONVAULT_EMBEDDINGS": "none",
        "SESSIONVAULT_RATE_PER_MINUTE": "10000",
        "SESSIONVAULT_RATE_PER_DAY": "100000",
        "SESSIONVAULT_AUDIT_RETENTION_DAYS": "90",
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "SESSIONVAULT_AUDIT_SALT_SECRET": salt,
        "mcp": cloud.secret("sv/app-url", f"{pg.app_url} application_name={APP_NAME}"),
        "admin": cloud.secret("sv/admin-url", pg.admin_url),
        "maint": cloud.secret("sv/maint-url", pg.maint_url),
    }


FUNCTION_DB = {"McpFunction": "mcp", "AdminFunction": "admin", "MaintenanceFunction": "maint"}


def environment_of(built: h.Built, function: str, stack: dict[str, str], cloud: Cloud) -> dict[str, str]:
    values = dict(stack)
    if function in FUNCTION_DB:
        values["SESSIONVAULT_DATABASE_URL_SECRET"] = stack[FUNCTION_DB[function]]
    env = h.function_env(built, function, values)
    env["AWS_ENDPOINT_URL"] = cloud.endpoint
    env["AWS_LAMBDA_FUNCTION_NAME"] = f"sv-{function}"
    return env


@pytest.fixture
def start(built: h.Built, stack: dict[str, str], cloud: Cloud) -> Iterator[Any]:
    """start(function, **env overrides) -> a running execution environment (closed after)."""
    started: list[h.Environment] = []

    def run(
        function: str, flags: tuple[str, ...] = (), drop: tuple[str, ...] = (), **extra: str
    ) -> h.Environment:
        env = {**environment_of(built, function, stack, cloud), **extra}
        environment = h.Environment(built.layout(function), env, python_flags=flags, drop=drop)
        started.append(environment)
        return environment

    yield run
    for environment in started:
        environment.close()


# ---------------------------------------------------------------- CloudFormation's response bucket


@dataclass
class ResponseBucket(CloudFormationAnswers):
    """An HTTPS proxy that plays the S3 bucket behind CloudFormation's presigned response URLs."""

    proxy: str
    ca_file: Path
    received: list[dict[str, Any]] = field(default_factory=list)
    tunnels: list[str] = field(default_factory=list)  # host:port of every CONNECT


def _read_head(stream: Any) -> tuple[str, dict[str, str]]:
    line = stream.readline().decode("latin-1").strip()
    headers: dict[str, str] = {}
    while True:
        raw = stream.readline().decode("latin-1")
        if raw in ("\r\n", "\n", ""):
            return line, headers
        name, _, value = raw.partition(":")
        headers[name.strip()] = value.strip()


@pytest.fixture
def response_bucket() -> Iterator[ResponseBucket]:
    folder = Path(tempfile.mkdtemp(prefix="sv-cfn-"))
    authority = Authority(folder, "sessionvault tier CA")
    ca_file = authority.ca_file
    cert_file, key_file = authority.issue("leaf", [RESPONSE_HOST])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    bucket = ResponseBucket(f"http://127.0.0.1:{listener.getsockname()[1]}", ca_file)
    stop = threading.Event()

    def one(conn: socket.socket) -> None:
        conn.settimeout(10)
        with conn:
            plain = conn.makefile("rb")
            request, _ = _read_head(plain)
            method, target, _ = request.split(" ", 2)
            bucket.tunnels.append(target)
            if method != "CONNECT" or target != f"{RESPONSE_HOST}:443":
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                return
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            with context.wrap_socket(conn, server_side=True) as tls:
                stream = tls.makefile("rb")
                request, headers = _read_head(stream)
                method, path, _ = request.split(" ", 2)
                body = stream.read(int(headers.get("Content-Length", "0")))
                bucket.received.append(
                    {"method": method, "path": path, "headers": headers, "body": json.loads(body)}
                )
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield bucket
    stop.set()
    thread.join(timeout=5)
    listener.close()
    shutil.rmtree(folder, ignore_errors=True)
