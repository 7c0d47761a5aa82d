"""The basic-memory importer reads only regular files inside the folder it is given, within the
import's caps: a note that is a symbolic link (to /proc/self/environ, to a file outside, to
another note), a linked folder, a FIFO, a note over the per-note cap and a folder over the
per-import caps are each refused with an error naming what and why, and nothing is imported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessionvault.errors import ValidationFailed
from sessionvault.local.data.importers import IMPORTERS, _common

read = IMPORTERS["basic-memory"]


def note(folder: Path, relative: str, text: str = "") -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text or f"---\ntitle: {path.stem}\n---\n\nA note about {path.stem}.\n")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "basic-memory"
    note(folder, "notes/plan.md")
    note(folder, "decisions/db.md")
    return folder


def test_regular_notes_are_read(project: Path) -> None:
    assert [r["name"] for r in read(project)] == ["basic-memory/decisions/db", "basic-memory/notes/plan"]


def test_a_note_linked_to_the_process_environment_is_refused(project: Path, monkeypatch) -> None:
    """The review's finding: notes/env.md -> /proc/self/environ imported the environment."""
    secret = "AKIA" + "EXAMPLESECRET1234"
    monkeypatch.setenv("AWS_SESSION_TOKEN", secret)
    (project / "notes" / "env.md").symlink_to("/proc/self/environ")
    with pytest.raises(ValidationFailed) as refused:
        read(project)
    assert "env.md is a symbolic link" in str(refused.value)
    assert "only regular files inside the folder" in str(refused.value)
    assert secret not in str(refused.value)


@pytest.mark.parametrize("target", ["outside", "inside"])
def test_a_linked_note_is_refused_wherever_it_points(project: Path, tmp_path: Path, target: str) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("DB_PASSWORD=hunter2")
    (project / "notes" / "link.md").symlink_to(outside if target == "outside" else project / "notes/plan.md")
    with pytest.raises(ValidationFailed, match=r"link\.md is a symbolic link"):
        read(project)


def test_a_linked_folder_is_refused(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    note(elsewhere, "private.md")
    (project / "shared").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ValidationFailed, match=r"shared is a symbolic link"):
        read(project)


def test_a_single_note_given_as_a_link_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "env.md"
    link.symlink_to("/proc/self/environ")
    with pytest.raises(ValidationFailed, match=r"env\.md"):
        read(link)


def test_a_fifo_named_like_a_note_is_never_opened(project: Path) -> None:
    """Opened for reading, a FIFO would wait for a writer for ever: in a folder it is not a
    note, and named as the note to import it is refused, without blocking either way."""
    fifo = project / "notes" / "pipe.md"
    os.mkfifo(fifo)
    assert len(read(project)) == 2
    with pytest.raises(ValidationFailed, match=r"pipe\.md is not a regular file"):
        read(fifo)


def test_links_that_are_not_notes_are_left_alone(project: Path) -> None:
    (project / "notes" / "picture.png").symlink_to("/proc/self/environ")
    assert len(read(project)) == 2


def test_a_note_over_the_per_note_cap_is_refused(project: Path, monkeypatch) -> None:
    monkeypatch.setattr(_common, "MAX_ITEM_BYTES", 1000)
    note(project, "notes/huge.md", "x" * 1001)
    with pytest.raises(ValidationFailed) as refused:
        read(project)
    assert "huge.md is 1,001 bytes, over the 1,000-byte cap on one item" in str(refused.value)


def test_a_folder_over_the_per_import_caps_is_refused(project: Path, monkeypatch) -> None:
    size = (project / "decisions/db.md").stat().st_size
    monkeypatch.setattr(_common, "MAX_IMPORT_BYTES", size + 1)  # the first note fits, not both
    with pytest.raises(ValidationFailed, match=f"more than {size + 1} bytes to import"):
        read(project)
    monkeypatch.setattr(_common, "MAX_IMPORT_BYTES", 10_000)
    monkeypatch.setattr(_common, "MAX_IMPORT_ITEMS", 1)
    with pytest.raises(ValidationFailed, match=r"more than 1 notes"):
        read(project)
