"""The embedded PostgreSQL's supervisor (issue 29, item 4): bounded, logged attempts to start
it again when it is found dead; giving up said once. The real kill -9 is in
tests/e2e/test_server_faults.py; here the database is stood in for, to count attempts."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from sessionvault.local.host.supervisor import Supervisor


class Database:
    def __init__(self, failures: int) -> None:
        self.up = False  # found dead at the first look
        self.failures, self.attempts = failures, 0
        self.lock = threading.Lock()

    def alive(self, home: Path) -> bool:
        return self.up

    def restart(self, home: Path) -> None:
        with self.lock:
            self.attempts += 1
            if self.attempts <= self.failures:
                raise RuntimeError("shared memory still in use")
            self.up = True


def until(check: Any) -> None:
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, "state not reached"
        time.sleep(0.01)


def supervise(db: Database, attempts: int, **options: Any) -> Supervisor:
    """A fast watch over the stand-in, which answers once it is up unless `options` say else."""
    settings = {
        "restart": db.restart,
        "alive": db.alive,
        "answers": db.alive,
        "first_pause_s": 0.001,
        **options,
    }
    return Supervisor(Path("/nonexistent"), interval_s=0.01, attempts=attempts, **settings).start()


def test_a_dead_database_is_started_again_after_failed_attempts() -> None:
    db = Database(failures=2)
    sup = supervise(db, attempts=5)
    try:
        until(lambda: sup.restarts == 1)
        assert db.attempts == 3 and not sup.gave_up
    finally:
        sup.stop()


def test_the_attempts_are_bounded_and_giving_up_ends_the_watch() -> None:
    db = Database(failures=1000)
    sup = supervise(db, attempts=4)
    sup._thread.join(timeout=30)
    assert not sup._thread.is_alive()
    assert sup.gave_up and db.attempts == 4 and sup.restarts == 0


def test_a_start_that_returns_before_the_server_answers_is_reported_once_when_it_answers() -> None:
    """Issue 35 item 9: the start returned at once while the server did not yet take
    connections, and "running again" was logged for each such return: one restart read as
    three. Now a restart counts when the server answers."""
    db = Database(failures=0)
    answered: list[int] = []

    def answers(home: Path) -> bool:
        answered.append(1)
        return len(answered) >= 5  # the fifth look finds it answering

    sup = supervise(db, attempts=3, answers=answers)
    try:
        until(lambda: sup.restarts == 1)
        time.sleep(0.1)  # the database is up now: no further restart
        assert (sup.restarts, db.attempts, len(answered)) == (1, 1, 5)
    finally:
        sup.stop()


def test_a_start_that_never_answers_is_a_failed_attempt() -> None:
    db = Database(failures=0)
    sup = supervise(db, attempts=2, alive=lambda home: False, answers=lambda home: False, ready_s=0.05)
    try:
        until(lambda: sup.gave_up)
        assert (sup.restarts, db.attempts) == (0, 2)
    finally:
        sup.stop()


def test_a_start_that_answers_late_counts_when_it_answers_not_after_another_start() -> None:
    """A loaded machine: the start answered after `ready_s`, during the pause before the next
    attempt; "running again" waited for that attempt (and a test reading the log just after the
    server served again saw none). Now the pause watches for the answer."""
    db = Database(failures=0)
    started_at: list[float] = []

    def restart(home: Path) -> None:
        started_at.append(time.monotonic())
        db.restart(home)

    def answers(home: Path) -> bool:  # answers 0.3 s after the start: past ready_s, within the pause
        return bool(started_at) and time.monotonic() - started_at[0] >= 0.3

    sup = supervise(db, attempts=3, restart=restart, answers=answers, ready_s=0.1, first_pause_s=5.0)
    try:
        until(lambda: sup.restarts == 1)
        assert db.attempts == 1 and not sup.gave_up
        assert time.monotonic() - started_at[0] < 5.0  # said when it answered, not after the pause
    finally:
        sup.stop()
