"""Admin function: invoked with IAM only (aws lambda invoke), never routed over HTTP.
Event: {"action": "create_user" | "create_key" | "list_keys" | "revoke_key" | "disable_user" |
"delete_user" | "rotate_keys", ...arguments}. Answer: {"ok": bool, ...}."""

from typing import Any

from sessionvault import admin
from sessionvault.cloud import lambda_settings
from sessionvault.runtime import open_runtime

RUNTIME = open_runtime(lambda_settings(), pool_size=1)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return admin.dispatch(RUNTIME, event)
