"""The migrate function's world: a password-protected cluster, CloudFormation's response
bucket (a local server the function's PUT is routed to), the stack's secrets in moto, and a
stand-in TLS server for the owner connection's checks."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import boto3
import psycopg
import pytest
from moto import mock_aws

from ...support.cluster import Cluster, running_cluster
from ...support.lambda_events import (
    RESPONSE_HOST,
    ROLES,
    SETTINGS,
    CloudFormationAnswers,
    custom_resource_event,
    response_url,
)
from ..conftest import REGION, LambdaContext, load_handler

PLACEHOLDER = "placeholder: written by the Database custom resource on deploy"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_cluster("sv-migrate-") as db:
        yield db


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


def assert_untouched(stack: Stack, seen: SecretsSeen, *, read: bool = False) -> None:
    """No secret read (unless read: refused after reading), none written, the URLs as they were."""
    if not read:
        assert seen.clients == 0 and seen.read == [], seen.read
    assert seen.written == []
    for slot in ROLES:
        assert stack.url(slot) == PLACEHOLDER
