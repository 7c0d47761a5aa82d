"""On a terminal the request lines go to a file in the state folder, away from the banner;
anywhere else (a service's journal, a pipe, CI) they stay JSON on stdout."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from sessionvault import telemetry
from sessionvault.local.host import request_logs


@pytest.fixture
def fresh_logger():
    log = telemetry.logger()
    handlers = list(log.handlers)
    yield
    for handler in list(log.handlers):  # the process's logger as it was, for the next test
        log.removeHandler(handler)
    for handler in handlers:
        log.addHandler(handler)


def test_on_a_terminal_the_request_lines_go_to_a_file_and_not_to_stdout(tmp_path: Path, fresh_logger):
    path = request_logs.route(tmp_path, terminal=True)
    assert path == tmp_path / "logs" / "requests.log"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    telemetry.emit(telemetry.RequestLog("req-1", tool="load_session", status=200, latency_ms=3))
    assert not any(getattr(h, "stream", None) is sys.stdout for h in telemetry.logger().handlers)
    line = json.loads(path.read_text().splitlines()[-1])
    assert line["request_id"] == "req-1" and line["tool"] == "load_session"


@pytest.mark.parametrize(("home", "terminal"), [(True, False), (False, True)])
def test_without_a_terminal_or_a_state_folder_they_stay_on_stdout(
    tmp_path: Path, fresh_logger, home, terminal
):
    before = list(telemetry.logger().handlers)  # Powertools' JSON to stdout
    assert request_logs.route(tmp_path if home else None, terminal=terminal) is None
    assert not (tmp_path / "logs").exists()
    assert telemetry.logger().handlers == before
