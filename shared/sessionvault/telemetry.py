"""One structured JSON log line per request (Powertools Logger; correlation id = the request
id) and, inside Lambda, CloudWatch metrics (Powertools Metrics, embedded metric format).

Requests refused before or at authentication leave no database row: they are counted here.
Besides Requests, Errors and Latency (by tool), a refused key adds `AuthFailures` (by reason) and a
request stopped at the edge adds `EdgeRefusals` (by check), each in a metric set of its own so
that the tool series keep their one dimension."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from sessionvault.errors import ErrorClass


@dataclass
class RequestLog:
    request_id: str
    ip: str = ""
    user_agent: str = ""
    tool: str = ""
    user_id: str | None = None
    status: int = 0
    error_class: ErrorClass | None = None
    auth_reason: str = ""  # why a key was refused: logged here, never sent to the caller
    # the check that stopped it before its body: host | origin | content_type | auth_failures
    edge_check: str = ""
    failure: str = ""  # an exception's type name, never its message (messages carry secrets)
    latency_ms: int = 0
    audit_id: int | None = None  # the row admission wrote; None: the request never got that far
    admitted: bool = False
    # the admission's proof of the caller (the audit row's outcome is written with it): never logged
    proof: str = dataclasses.field(default="", repr=False)

    @property
    def outcome(self) -> str:
        return "error" if self.error_class else "ok"

    def fields(self) -> dict[str, Any]:
        # ip and user agent stay out: the audit row keeps only their salted hashes
        return {
            "request_id": self.request_id,
            "tool": self.tool,
            "user_id": self.user_id,
            "status": self.status,
            "outcome": self.outcome,
            "error_class": self.error_class,
            "auth_reason": self.auth_reason or None,
            "edge_check": self.edge_check or None,
            "failure": self.failure or None,
            "latency_ms": self.latency_ms,
        }


@cache
def logger() -> Any:
    from aws_lambda_powertools import Logger

    return Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "sessionvault"))


LOG_FILE_BYTES = 10 * 1024 * 1024  # a request log file rolls over past this, three old ones kept


def write_to(path: Path) -> None:
    """From now on, the request lines (the same JSON) go to `path`, not stdout: a local server
    on a terminal keeps them out of its banner (local/host/request_logs.py)."""
    from logging.handlers import RotatingFileHandler

    log = logger()
    handler = RotatingFileHandler(path, maxBytes=LOG_FILE_BYTES, backupCount=3)
    handler.setFormatter(log.registered_formatter)
    for old in list(log.handlers):
        log.removeHandler(old)
    log.addHandler(handler)


@cache
def metrics() -> Any:
    from aws_lambda_powertools import Metrics

    return Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "SessionVault"))


def in_lambda() -> bool:
    return "AWS_LAMBDA_FUNCTION_NAME" in os.environ


def emit(ctx: RequestLog) -> None:
    # The correlation id goes in per line: a shared Logger's set_correlation_id would race
    # between the worker threads of a local server.
    fields = {**ctx.fields(), "correlation_id": ctx.request_id}
    (logger().error if ctx.failure else logger().info)("request", extra=fields)
    if in_lambda():
        try:
            _flush_metrics(ctx)
        except Exception as exc:  # the line above is written; a metric lost must not fail the call
            metrics().clear_metrics()  # nothing half-built may ride along with the next call
            logger().error("metrics not written", extra={"failure": type(exc).__name__})


def _flush_metrics(ctx: RequestLog) -> None:
    from aws_lambda_powertools.metrics import MetricUnit

    m = metrics()
    m.add_dimension(name="tool", value=ctx.tool or "none")
    m.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
    m.add_metric(name="Errors", unit=MetricUnit.Count, value=1 if ctx.error_class else 0)
    m.add_metric(name="Latency", unit=MetricUnit.Milliseconds, value=ctx.latency_ms)
    m.flush_metrics()
    for name, dimension, value in (
        ("AuthFailures", "reason", ctx.auth_reason),
        ("EdgeRefusals", "check", ctx.edge_check),
    ):
        if value:
            m.add_dimension(name=dimension, value=value)
            m.add_metric(name=name, unit=MetricUnit.Count, value=1)
            m.flush_metrics()
