"""`sessionvault import`'s progress line: shown on a terminal's stderr only, rewritten in place
before each batch and cleared before anything else is printed."""

from __future__ import annotations

import pytest

from sessionvault.cli.capture import Progress
from sessionvault.local.remote.batch_import import ImportTotals


def test_progress_is_one_line_rewritten_on_a_terminal_and_cleared(capsys: pytest.CaptureFixture[str]) -> None:
    shown = Progress("sessions.ndjson", on=True)
    shown.show(ImportTotals(), 26)
    shown.show(ImportTotals(sessions=25, versions_added=40), 51)
    shown.note("rate limited; trying lines 52-76 again in 3 s")
    shown.clear()
    err = capsys.readouterr().err
    line = (
        "\r\x1b[Kimporting sessions.ndjson: {} session(s), {} version(s) added so far;"
        + " sending up to line {} ..."
    )
    assert err == (
        line.format(0, 0, 26)
        + line.format(25, 40, 51)
        + "\r\x1b[Krate limited; trying lines 52-76 again in 3 s\n"
    )


def test_no_progress_when_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    shown = Progress("stdin", on=False)
    shown.show(ImportTotals(), 26)
    shown.clear()
    shown.note("waiting")  # what must be said still is
    assert capsys.readouterr().err == "waiting\n"
