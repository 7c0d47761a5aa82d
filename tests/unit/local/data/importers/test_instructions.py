"""The instructions importers (CLAUDE.md, AGENTS.md, GEMINI.md) follow a link only to a regular
file inside the folder they were given (CLAUDE.md -> AGENTS.md, as people keep them), never out
of it, and keep the importers' size caps."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionvault.errors import ValidationFailed
from sessionvault.local.data.importers import IMPORTERS, _common


@pytest.fixture
def folder(isolated_git: Path, tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text("# Agents\n\n- [ ] write the tests\n")
    return project


def test_a_link_to_a_file_inside_the_folder_is_followed(folder: Path) -> None:
    (folder / "CLAUDE.md").symlink_to("AGENTS.md")
    [imported] = IMPORTERS["claude-md"](folder)
    assert imported["summary"].startswith("# Agents") and imported["todos"] == ["write the tests"]


@pytest.mark.parametrize("target", ["/proc/self/environ", "../outside.md"])
def test_a_link_out_of_the_folder_is_refused(folder: Path, target: str) -> None:
    (folder.parent / "outside.md").write_text("DB_PASSWORD=hunter2")
    (folder / "CLAUDE.md").symlink_to(target)
    for given in (folder, folder / "CLAUDE.md"):
        with pytest.raises(ValidationFailed, match=r"leads outside"):
            IMPORTERS["claude-md"](given)


def test_a_file_over_the_per_item_cap_is_refused(folder: Path, monkeypatch) -> None:
    monkeypatch.setattr(_common, "MAX_ITEM_BYTES", 10)
    with pytest.raises(ValidationFailed, match=r"AGENTS\.md is 32 bytes, over the 10-byte cap"):
        IMPORTERS["agents-md"](folder)
