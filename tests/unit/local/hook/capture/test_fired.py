"""When each client's hooks last ran: recorded by `sessionvault hook ...`, read by doctor."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from sessionvault.cli import hook as hook_cli
from sessionvault.local.hook.capture import fired
from sessionvault.names import HOME_ENV


def test_a_record_is_kept_per_client_and_event_0600(tmp_path: Path) -> None:
    state = tmp_path / "state"
    fired.record(state, "copilot-cli", "session-start")
    fired.record(state, "copilot-cli", "checkpoint", {"outcome": "sent auto/copilot-cli/x", "saved": 5.0})
    fired.record(state, "droid", "checkpoint", {"outcome": "no transcript found"})
    data = fired.read(state)
    assert set(data) == {"copilot-cli", "droid"}
    assert {"session-start", "checkpoint", "outcome", "saved"} <= set(data["copilot-cli"])
    assert data["droid"]["outcome"] == "no transcript found"
    assert stat.S_IMODE((state / fired.FILE).stat().st_mode) == 0o600


def test_a_broken_or_foreign_file_is_read_as_nothing_and_never_raises(tmp_path: Path) -> None:
    (tmp_path / fired.FILE).write_text("[1, 2")
    assert fired.read(tmp_path) == {}
    (tmp_path / fired.FILE).write_text(json.dumps({"a": 1, "b": {"checkpoint": 2}}))
    assert fired.read(tmp_path) == {"b": {"checkpoint": 2}}
    blocked = tmp_path / "file"
    blocked.write_text("")
    fired.record(blocked / "state", "x", "checkpoint")  # its parent is a file: nothing, no error
    assert fired.read(tmp_path / "missing") == {}


def test_the_hook_commands_record_that_they_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "state"))
    monkeypatch.delenv("SESSIONVAULT_API_KEY", raising=False)
    monkeypatch.setattr(sys, "stdin", open("/dev/null"))  # noqa: SIM115
    assert hook_cli.main(["session-start", "--client", "cline-cli"]) == 0
    assert hook_cli.main(["checkpoint", "--client", "cline-cli"]) == 0
    ran = fired.read(tmp_path / "state")["cline-cli"]
    assert "session-start" in ran and "checkpoint" in ran and "saved" not in ran
    assert ran["outcome"] == "no transcript found"  # no Cline session in this folder
    assert capsys.readouterr().out.startswith("SessionVault: ")  # the cline-cli output: plain text
