"""The `sessionvault` command that configs and hooks name is pinned to one absolute path here,
so the expected shapes do not depend on where this checkout's virtualenv is."""

from __future__ import annotations

import pytest

from sessionvault.local.host import command

SV = "/opt/sessionvault/bin/sessionvault"


@pytest.fixture(autouse=True)
def _pinned_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(command, "sessionvault_argv", lambda: [SV])
