"""Admin function: invoked with IAM only (aws lambda invoke), never routed over HTTP.
Event: {"action": <one of jobs.admin.ACTIONS>, ...arguments}. Answer: {"ok": bool, ...}."""

from typing import Any

from sessionvault import aws_secrets
from sessionvault.jobs import admin
from sessionvault.runtime import open_runtime

RUNTIME = open_runtime(aws_secrets.from_lambda(), pool_size=1)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return admin.dispatch(RUNTIME, event, getattr(context, "aws_request_id", ""))
