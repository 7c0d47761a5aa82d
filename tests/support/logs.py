"""The server's log lines as they are emitted, caught by a handler of our own: safe to wait on
from another thread (pytest's capfd can lose a line the server writes while it is read)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sessionvault import telemetry


class LogCatcher(logging.Handler):
    """The app's one JSON line per request, formatted exactly as the Powertools logger writes
    it to stdout (same formatter), plus any error line a module logs along the way."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(telemetry.logger().registered_formatter)
        self.lines: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        line = json.loads(self.format(record))
        with self._lock:
            self.lines.append(line)

    def requests(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if line.get("message") == "request"]

    def take(self) -> list[dict[str, Any]]:
        """Every line caught so far, and forget them."""
        with self._lock:
            lines, self.lines = self.lines, []
        return lines

    def requests_until(
        self, done: Callable[[list[dict[str, Any]]], bool], timeout_s: float = 15
    ) -> list[dict[str, Any]]:
        """The request lines, once `done(lines)` holds (or the timeout passed): a line is
        written just after its answer, so it may come a moment after the client has it."""
        deadline = time.monotonic() + timeout_s
        while not done(self.requests()) and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.requests()

    def last_request(self) -> dict[str, Any]:
        found = self.requests()
        assert found, "the app logged no request line"
        return found[-1]


@contextmanager
def catch_logs() -> Iterator[LogCatcher]:
    telemetry.logger()  # built (with its stdout handler) before ours is added
    catcher = LogCatcher()
    logger = logging.getLogger("sessionvault")
    logger.addHandler(catcher)
    try:
        yield catcher
    finally:
        logger.removeHandler(catcher)
