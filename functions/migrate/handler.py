"""Migrate function: the Database custom resource's backing function (template.yaml). Invoked by
CloudFormation only, on every deploy that brings new code: migrates as the owner, sets the login
roles' passwords, writes the functions' connection secrets, and always answers the stack
(jobs/provision/resource.py). Its configuration is its environment, never the event; an event that is
not CloudFormation's is refused unanswered."""

from pathlib import Path
from typing import Any

import boto3  # type: ignore[import-untyped]

from sessionvault import telemetry
from sessionvault.jobs.provision import resource as provision

CODE_DIR = Path(__file__).resolve().parent  # a relative DatabaseCaBundle is a file shipped here


def handler(event: Any, context: Any) -> dict[str, Any]:
    remaining = getattr(context, "get_remaining_time_in_millis", lambda: 300_000)
    return provision.handle(
        event, remaining, lambda: boto3.client("secretsmanager"), telemetry.logger(), base_dir=CODE_DIR
    )
