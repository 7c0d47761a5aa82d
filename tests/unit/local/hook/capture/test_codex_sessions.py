"""Finding Codex's rollout of a session: by its id, or the newest begun in a folder, in the
state folder Codex uses ($CODEX_HOME, else ~/.codex)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sessionvault.local.hook.capture import codex_sessions

from .recorded_run import CWD
from .test_codex import SESSION_ID, installed, write_entries


def test_locate_finds_a_session_by_its_id_wherever_it_began(tmp_path: Path) -> None:
    path = installed(tmp_path)
    assert codex_sessions.locate(tmp_path, Path("/elsewhere"), SESSION_ID) == path
    assert codex_sessions.locate(tmp_path, CWD, "01a23331-0000-7000-8000-000000000000") is None
    assert codex_sessions.locate(tmp_path, CWD, "*") is None  # not an id: no glob over every session


def test_locate_without_an_id_takes_the_newest_session_begun_in_the_folder(tmp_path: Path) -> None:
    path = installed(tmp_path)
    older = write_entries(path.parent / "rollout-2026-11-30T10-00-00-aaaa-bbbb.jsonl", cwd=str(CWD))
    other = write_entries(path.parent / "rollout-2026-12-02T10-00-00-cccc-dddd.jsonl", cwd="/other")
    os.utime(older, (1, 1))
    assert codex_sessions.locate(tmp_path, CWD) == path
    assert codex_sessions.locate(tmp_path, Path("/other")) == other
    assert codex_sessions.locate(tmp_path, Path("/nowhere")) is None
    assert codex_sessions.locate(tmp_path / "no-codex-here", CWD) is None


def test_locate_looks_in_the_state_folder_it_is_given(tmp_path: Path) -> None:
    state = tmp_path / "codex-state"
    path = installed(tmp_path)
    shutil.move(tmp_path / ".codex", state)
    assert codex_sessions.locate(tmp_path, CWD) is None
    assert codex_sessions.locate(tmp_path, CWD, state=state) == state / path.relative_to(tmp_path / ".codex")


def test_the_state_folder_is_codex_home_when_set_else_dot_codex(tmp_path: Path) -> None:
    assert codex_sessions.codex_home(tmp_path, {}) == tmp_path / ".codex"
    assert codex_sessions.codex_home(tmp_path, {"CODEX_HOME": " "}) == tmp_path / ".codex"
    assert codex_sessions.codex_home(tmp_path, {"CODEX_HOME": "/srv/codex"}) == Path("/srv/codex")
