"""A cold MCP function's first calls import neither boto3 nor requests (issue 29, item 4).

What a cold environment's first save pays for is measured by benchmarks/coldstart.py; what it
must not load is pinned here, deterministically, in a fresh interpreter: the MCP handler
(functions/mcp/handler.py) against KMS and Secrets Manager from a moto server (a separate
process as AWS would be: moto's in-process mock imports boto3 itself), the real database,
driven through the calls a client makes first. Seen before: Powertools' package imports
botocore on the first request, which made the KMS client choose boto3 for the next save
(~250 ms); and the scrubber's library brought `requests` and urllib3 (~100 ms)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from sessionvault.core.keys import KmsKeyProvider
from sessionvault.service import accounts
from tests.conftest import admin_db

from .conftest import ROOT, http_event, rpc

NEVER_ON_THE_FIRST_CALLS = (
    *("boto3", "s3transfer", "requests", "urllib3", "charset_normalizer"),
    # deferred or kept out of init: the MCP Apps module (and through it the SDK's high-level
    # server) until a resources call; uvicorn and click, which nothing in Lambda runs
    *("mcp.server.apps", "uvicorn", "click"),
)

PROBE = """
import base64, importlib.util, json, sys

spec = importlib.util.spec_from_file_location("mcp_handler", sys.argv[1])
handler = importlib.util.module_from_spec(spec)
spec.loader.exec_module(handler)


class Context:
    function_name = "sessionvault-test"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:sessionvault-test"
    aws_request_id = "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"

    @staticmethod
    def get_remaining_time_in_millis():
        return 30_000


answers = [handler.handler(event, Context()) for event in json.load(sys.stdin)]
bodies = [json.loads(base64.b64decode(a["body"]) if a.get("isBase64Encoded") else a["body"]) for a in answers]
failed = [b for b in bodies if "error" in b or b["result"].get("isError")]
watched = json.loads(sys.argv[2])
loaded = sorted(m for m in watched if sys.modules.get(m) is not None)
print(json.dumps({"statuses": [a["statusCode"] for a in answers], "failed": failed, "loaded": loaded}))
"""


@pytest.fixture
def stack(pg) -> Iterator[tuple[dict[str, str], Any]]:
    """A moto server with the stack's KMS key and secrets: the function's environment, and a
    KMS client of this process for making a user."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_LAMBDA_FUNCTION_NAME": "sessionvault-test",
        "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9",  # what the handler reads as "inside Lambda"; unused
        "SESSIONVAULT_KEY_PROVIDER": "kms",
        "SESSIONVAULT_EMBEDDINGS": "none",
        "SESSIONVAULT_ALLOWED_HOSTS": "*",
    }

    def client(service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=env["AWS_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    kms, sm = client("kms"), client("secretsmanager")
    env["SESSIONVAULT_KMS_KEY_ID"] = kms.create_key()["KeyMetadata"]["Arn"]
    env["SESSIONVAULT_DATABASE_URL_SECRET"] = sm.create_secret(Name="db", SecretString=pg.app_url)["ARN"]
    salt = sm.create_secret(Name="salt", SecretString=secrets.token_urlsafe(32))
    env["SESSIONVAULT_AUDIT_SALT_SECRET"] = salt["ARN"]
    try:
        yield env, kms
    finally:
        server.stop()


def new_key(env: dict[str, str], kms: Any) -> str:
    """A user (its data key wrapped by the moto server's KMS) and a read/write key."""
    provider = KmsKeyProvider(env["SESSIONVAULT_KMS_KEY_ID"], client=kms)
    user = accounts.create_user(admin_db(), provider, f"cold-{secrets.token_hex(4)}")
    key, _ = accounts.create_key(admin_db(), user, "cold", ("read", "write"))
    return key


def test_the_first_calls_of_a_cold_function_import_neither_boto3_nor_requests(stack) -> None:
    stack_env, kms = stack
    key = new_key(stack_env, kms)
    headers = {"mcp_protocol_version": "2025-06-18"}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    bodies = [
        rpc("initialize", hello),  # the calls before the first save load Powertools (and botocore)
        rpc("tools/list"),
        rpc("tools/call", {"name": "save_session", "arguments": {"name": "cold", "summary": "first"}}),
        rpc("tools/call", {"name": "load_session", "arguments": {"name": "cold"}}),
    ]
    events = [http_event(body, key=key, **headers) for body in bodies]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SESSIONVAULT_"))}
    env = {**clean, **stack_env}
    argv = [sys.executable, "-c", PROBE, str(ROOT / "functions" / "mcp" / "handler.py")]
    argv.append(json.dumps(NEVER_ON_THE_FIRST_CALLS))
    out = subprocess.run(argv, input=json.dumps(events), env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    report = json.loads(out.stdout.splitlines()[-1])
    assert report["loaded"] == []
    assert report["statuses"] == [200] * len(bodies) and report["failed"] == []
