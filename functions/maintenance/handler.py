"""Maintenance function, on EventBridge schedules: {"task": "prune_rate_limits" |
"prune_audit" | "reembed"}. Each task is idempotent and safe to run twice at once."""

from typing import Any

from sessionvault import maintenance, telemetry
from sessionvault.cloud import audit_retention_days, lambda_settings
from sessionvault.runtime import open_runtime

RUNTIME = open_runtime(lambda_settings(), pool_size=1)
RETENTION_DAYS = audit_retention_days()


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    task = str(event.get("task", ""))
    result = maintenance.run(RUNTIME, task, RETENTION_DAYS)
    telemetry.logger().info("maintenance", extra={"task": task, **result})
    return {"task": task, **result}
