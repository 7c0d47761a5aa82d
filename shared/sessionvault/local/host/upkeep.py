"""Local upkeep: what the scheduled maintenance functions do in the cloud, done by a local
`serve` itself. A daemon thread prunes rate-limit counters and old audit rows (every job of
`jobs.maintenance` named prune_*), seals previews saved in plaintext before migration 0015
(`seal_previews`), gives heads saved before 0022 their search terms (`index_terms`), seals the
vectors saved before 0023 (`seal_vectors`) and folds changed vectors into segments
(`compact_vectors`), on start and then every `interval_s`, through one admin-role connection
held for the thread's life. A failure is logged (its type, never its message) and the next
round tries again; nothing here can stop the server."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sessionvault import telemetry
from sessionvault.errors import ConfigError
from sessionvault.jobs import maintenance

if TYPE_CHECKING:
    from sessionvault.local.host.target import Target
    from sessionvault.runtime import Runtime

INTERVAL_S = 600.0


def prune_jobs() -> dict[str, Callable[[Runtime], dict[str, int]]]:
    return {
        name: job
        for name, job in maintenance.TASKS.items()
        if name.startswith("prune_")
        or name in ("seal_previews", "index_terms", "seal_vectors", "compact_vectors")
    }


def run_once(rt: Runtime) -> dict[str, Any]:
    """Every prune job once; a job that fails is logged and reported by its error's type."""
    results: dict[str, Any] = {}
    for name, job in prune_jobs().items():
        try:
            results[name] = job(rt)
        except Exception as exc:
            failure = type(exc).__name__
            results[name] = {"failed": failure}
            telemetry.logger().error("local upkeep failed", extra={"task": name, "failure": failure})
    return results


def open_admin_runtime(t: Target) -> Runtime:
    """One connection on the admin role (pruning walks the users), no embedding model."""
    from sessionvault.runtime import open_runtime

    if not t.admin_url:
        raise ConfigError("local upkeep needs DATABASE_ADMIN_URL (the sessionvault_admin role)")
    return open_runtime(replace(t.settings, database_url=t.admin_url, embeddings="none"), pool_size=1)


class Upkeep:
    def __init__(
        self,
        open_rt: Callable[[], Runtime],
        *,
        interval_s: float = INTERVAL_S,
        on_round: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self._open_rt, self.interval_s, self._on_round = open_rt, interval_s, on_round
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sessionvault-upkeep", daemon=True)

    @classmethod
    def for_target(cls, t: Target, **kwargs: Any) -> Upkeep:
        return cls(lambda: open_admin_runtime(t), **kwargs)

    def start(self) -> Upkeep:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            rt = self._open_rt()
        except Exception as exc:
            # Our own ConfigError says what to set; any other error only by its type.
            reason = str(exc) if isinstance(exc, ConfigError) else type(exc).__name__
            telemetry.logger().warning(
                "local upkeep is off: old rate-limit and audit rows will not be pruned",
                extra={"failure": reason},
            )
            return
        try:
            while not self._stop.is_set():
                results = run_once(rt)
                deleted = sum(r.get("deleted", 0) for r in results.values())
                if deleted:
                    telemetry.logger().info("local upkeep", extra={"deleted": deleted})
                if self._on_round is not None:
                    self._on_round(results)
                self._stop.wait(self.interval_s)
        except Exception as exc:  # a bug in a callback, say: log it, leave the server alone
            telemetry.logger().error("local upkeep stopped", extra={"failure": type(exc).__name__})
        finally:
            rt.close()
