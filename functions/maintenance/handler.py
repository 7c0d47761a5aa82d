"""Maintenance function, on EventBridge schedules: {"task": <one of jobs.maintenance.TASKS>}.
Each task is idempotent and safe to run twice at once."""

from typing import Any

from sessionvault import aws_secrets, telemetry
from sessionvault.jobs import maintenance
from sessionvault.runtime import open_runtime

RUNTIME = open_runtime(aws_secrets.from_lambda(), pool_size=1)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    task = str(event.get("task", ""))
    result = maintenance.run(RUNTIME, task)
    telemetry.logger().info("maintenance", extra={"task": task, **result})
    return {"task": task, **result}
