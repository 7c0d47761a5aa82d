"""The embedded PostgreSQL, watched: when it dies, the server starts it again by itself.

Before, a killed postmaster (`kill -9`, the OOM killer) left every request waiting 10 s for a
503 until a person started the database by hand. The server that runs on the embedded default
now looks every `interval_s` whether the postmaster named in postmaster.pid is alive; when it
is not, it starts it again in the same folder and on the same socket, so the pool's URLs stay
right and its connections heal on first use (db/pool.py retries a dead connection). Attempts
are bounded (`attempts`, doubling pauses: the killed server's backends must exit before its
shared memory can be taken again), each logged; when all fail, it says so once, with what to
do, and stops trying."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from sessionvault import telemetry
from sessionvault.local.host import embedded

INTERVAL_S = 1.0
ATTEMPTS = 6
FIRST_PAUSE_S = 0.5  # then 1, 2, 4, 8: about 15 s in all before giving up
READY_S = 5.0  # how long a started server has to answer before the attempt counts as failed
POLL_S = 0.05


class Supervisor:
    def __init__(
        self,
        home: Path,
        *,
        interval_s: float = INTERVAL_S,
        attempts: int = ATTEMPTS,
        first_pause_s: float = FIRST_PAUSE_S,
        restart: Callable[[Path], None] = embedded.restart,
        alive: Callable[[Path], bool] = embedded.running,
        answers: Callable[[Path], bool] = embedded.answers,
        ready_s: float = READY_S,
    ) -> None:
        self.home, self.interval_s = home, interval_s
        self.attempts, self.first_pause_s = attempts, first_pause_s
        self._restart, self._alive, self._answers, self.ready_s = restart, alive, answers, ready_s
        self.restarts = 0  # the server was started again this many times
        self.gave_up = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sessionvault-supervisor", daemon=True)

    def start(self) -> Supervisor:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            if not self._alive(self.home) and not self._restore():
                return

    def _ready(self, within_s: float | None = None) -> bool:
        """Whether the started server answers within `within_s` (default `ready_s`; False too
        if the watch stops)."""
        deadline = time.monotonic() + (self.ready_s if within_s is None else within_s)
        while not self._answers(self.home):
            if time.monotonic() >= deadline or self._stop.wait(POLL_S):
                return False
        return True

    def _restore(self) -> bool:
        """Start the database again; False when every attempt failed (or the server stops)."""
        log = telemetry.logger()
        log.warning("the embedded PostgreSQL is down: starting it again", extra={"state": str(self.home)})
        pause = self.first_pause_s
        for attempt in range(1, self.attempts + 1):
            try:
                self._restart(self.home)
                failure = None if self._ready() else "NotAnswering"
            except Exception as exc:  # pg_ctl's failure, by type: its log is in pgdata/log
                failure = type(exc).__name__
            if failure is not None:  # a start that returned is not yet a server that answers
                log.warning(
                    "the embedded PostgreSQL did not start",
                    extra={"attempt": attempt, "of": self.attempts, "failure": failure},
                )
                # A slow start (a loaded machine) may still answer: watched through the pause,
                # so "running again" is said when it does, not after another start attempt.
                late = not self._stop.is_set() and self._ready(within_s=pause)
                if not late:
                    if self._stop.is_set():
                        return False
                    pause *= 2
                    continue
            self.restarts += 1  # said once, when it answers (issue 35 item 9)
            log.warning("the embedded PostgreSQL is running again", extra={"attempt": attempt})
            return True
        self.gave_up = True
        log.error(
            "the embedded PostgreSQL could not be started again: requests get 503 until it is;"
            " see its log in the state folder (pgdata/log), then restart the server",
            extra={"attempts": self.attempts, "state": str(self.home)},
        )
        return False
