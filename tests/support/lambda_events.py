"""What AWS sends the Lambda functions and what they answer, for both tiers: tests/lambda (the
handlers in-process) and tests/lambda_runtime (the `sam build` output in a Lambda runtime process,
the events serialized by its Runtime API). API Gateway HTTP API events and JSON-RPC bodies for the
MCP, admin and maintenance functions; CloudFormation custom-resource requests and their answers
for the migrate function (the Database resource)."""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

# ---------------------------------------------------------------- API Gateway (payload format 2.0)


def http_event(
    body: bytes | str, *, key: str | None = None, method: str = "POST", path: str = "/mcp", **headers: str
) -> dict[str, Any]:
    """An API Gateway HTTP API payload-format-2.0 event, as AWS sends it. Extra headers are
    given as keywords, `_` for `-` (mcp_protocol_version="2025-06-18")."""
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


def rpc(method: str, params: dict[str, Any] | None = None, id_: int = 1) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def body_json(response: Mapping[str, Any]) -> Any:
    body = response["body"]
    if response.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    return json.loads(body)


# ---------------------------------------------------------------- CloudFormation custom resources


# The S3 bucket behind the presigned URLs CloudFormation waits on for an answer (us-east-1).
RESPONSE_HOST = "cloudformation-custom-resource-response-useast1.s3.amazonaws.com"
STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/sv/5b6c2a60-7b61-11e6-9a41-93e8deadbeef"
SERVICE_TOKEN = "arn:aws:lambda:us-east-1:123456789012:function:sv-migrate"


def response_url(host: str = RESPONSE_HOST, prefix: str = "") -> str:
    """A presigned S3 URL of the kind CloudFormation puts in an event's ResponseURL."""
    key = quote(f"{STACK_ID}|Database|{uuid.uuid4()}", safe="")
    return (
        f"https://{host}{prefix}/{key}?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIAEXAMPLE%2F20261130%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20261130T093000Z&X-Amz-Expires=7200&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=abc"
    )


def custom_resource_event(
    request_type: str,
    props: Mapping[str, str],
    *,
    url: str | None = None,
    old: Mapping[str, str] | None = None,
    physical_id: str | None = None,
) -> dict[str, Any]:
    """A request for the Database custom resource exactly as CloudFormation sends it to the
    function (url: its ResponseURL, a fresh response_url() if not given)."""
    body: dict[str, Any] = {
        "RequestType": request_type,
        "ServiceToken": SERVICE_TOKEN,
        "ResponseURL": url or response_url(),
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


class CloudFormationAnswers:
    """What a stand-in for CloudFormation's response bucket received: each PUT as a dict with
    its "path", "headers" and JSON "body" (the function's answer)."""

    received: list[dict[str, Any]]

    def last(self) -> dict[str, Any]:
        assert self.received, "the function never answered CloudFormation"
        return dict(self.received[-1]["body"])


# The database roles the stack makes, by the slot name of their secrets.
ROLES = {"App": "sessionvault_app", "Admin": "sessionvault_admin", "Maint": "sessionvault_maint"}

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
