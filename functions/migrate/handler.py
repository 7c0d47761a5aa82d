"""Migrate function: the Database custom resource's backing function (template.yaml). Invoked by
CloudFormation only, on every deploy that brings new code: migrates as the owner, sets the login
roles' passwords, writes the functions' connection secrets, and always answers the stack
(jobs/provision.py)."""

from typing import Any

import boto3  # type: ignore[import-untyped]

from sessionvault import telemetry
from sessionvault.jobs import provision


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    remaining = getattr(context, "get_remaining_time_in_millis", lambda: 300_000)
    return provision.handle(event, remaining, lambda: boto3.client("secretsmanager"), telemetry.logger())
