"""Fixtures for the client-config tests: a fake home, project folder and state folder, on Linux."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture(autouse=True)
def _linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The state folder, where backups of changed configs go: never the real ~/.sessionvault."""
    folder = tmp_path / "state"
    monkeypatch.setenv("SESSIONVAULT_HOME", str(folder))
    return folder
