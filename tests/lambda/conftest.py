"""Lambda handlers driven the way AWS drives them: real API Gateway v2 event payloads through
Mangum, KMS and Secrets Manager from moto, the database the real embedded one."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, pg) -> Iterator[dict[str, str]]:
    """A moto account holding the stack's KMS key and secrets, and the function's environment."""
    for name, value in {
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_LAMBDA_FUNCTION_NAME": "sessionvault-test",
        "POWERTOOLS_METRICS_NAMESPACE": "SessionVaultTest",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        kms = boto3.client("kms", region_name=REGION)
        key_arn = kms.create_key(Description="sessionvault")["KeyMetadata"]["Arn"]
        sm = boto3.client("secretsmanager", region_name=REGION)
        sm.create_secret(Name="sv/database-url", SecretString=pg.app_url)
        sm.create_secret(Name="sv/admin-database-url", SecretString=pg.admin_url)
        sm.create_secret(Name="sv/maint-database-url", SecretString=pg.maint_url)
        sm.create_secret(Name="sv/audit-salt", SecretString=secrets.token_urlsafe(32))
        env = {
            "SESSIONVAULT_KEY_PROVIDER": "kms",
            "SESSIONVAULT_KMS_KEY_ID": key_arn,
            "SESSIONVAULT_DATABASE_URL_SECRET": "sv/database-url",
            "SESSIONVAULT_AUDIT_SALT_SECRET": "sv/audit-salt",
            "SESSIONVAULT_EMBEDDINGS": "none",
            "SESSIONVAULT_ALLOWED_HOSTS": "*",
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        yield env


# As in template.yaml: each function connects as its own database role.
DATABASE_SECRET = {
    "mcp": "sv/database-url",
    "admin": "sv/admin-database-url",
    "maintenance": "sv/maint-database-url",
}


def load_handler(function: str) -> Any:
    """Import functions/<function>/handler.py as Lambda would: a fresh module, a cold start,
    with that function's own environment."""
    name = f"sv_lambda_{function}_handler"
    sys.modules.pop(name, None)
    spec = importlib.util.spec_from_file_location(name, ROOT / "functions" / function / "handler.py")
    module = importlib.util.module_from_spec(spec)
    saved = os.environ.get("SESSIONVAULT_DATABASE_URL_SECRET")
    if saved is not None:
        os.environ["SESSIONVAULT_DATABASE_URL_SECRET"] = DATABASE_SECRET[function]
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is not None:
            os.environ["SESSIONVAULT_DATABASE_URL_SECRET"] = saved
    return module


class LambdaContext:
    function_name = "sessionvault-test"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:sessionvault-test"
    aws_request_id = "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def http_event(
    body: bytes | str, *, key: str | None = None, method: str = "POST", path: str = "/mcp", **headers: str
) -> dict[str, Any]:
    """An API Gateway HTTP API payload-format-2.0 event, as AWS sends it."""
    raw = body.encode() if isinstance(body, str) else body
    request_headers = {
        "host": "abc123.execute-api.us-east-1.amazonaws.com",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "user-agent": "claude-code/2.0",
        "content-length": str(len(raw)),
        "x-forwarded-for": "203.0.113.9",
        "x-forwarded-proto": "https",
        "x-forwarded-port": "443",
        **{k.lower().replace("_", "-"): v for k, v in headers.items()},
    }
    if key:
        request_headers["authorization"] = f"Bearer {key}"
    return {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": request_headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.9",
                "userAgent": "claude-code/2.0",
            },
            "requestId": f"req-{secrets.token_hex(6)}",
            "routeKey": f"{method} {path}",
            "stage": "$default",
            "time": "30/Nov/2026:09:30:00 +0000",
            "timeEpoch": 1795944600000,
        },
        "body": base64.b64encode(raw).decode(),
        "isBase64Encoded": True,
    }


def rpc(method: str, params: dict | None = None, id_: int = 1) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def body_json(response: dict[str, Any]) -> Any:
    body = response["body"]
    if response.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    return json.loads(body)
