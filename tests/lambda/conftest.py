"""Lambda handlers driven the way AWS drives them: real API Gateway v2 event payloads through
Mangum, KMS and Secrets Manager from moto, the database the real embedded one."""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

# The events and bodies are the Lambda-runtime tier's too: the test modules import them from here.
from ..support.lambda_events import body_json as body_json
from ..support.lambda_events import http_event as http_event
from ..support.lambda_events import rpc as rpc

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
