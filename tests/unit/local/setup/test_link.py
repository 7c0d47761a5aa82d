"""`sessionvault link` (sessionvault.local.setup.link): ~/.local/bin/sessionvault made only where
nothing is, or kept when it is ours already; anything else is left alone and named. Every case
says how to undo it, and the line to add when the folder is not on PATH."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessionvault.local.setup import link, profile


@pytest.fixture
def program(tmp_path: Path) -> Path:
    script = tmp_path / "checkout" / ".venv" / "bin" / "sessionvault"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def dest(home: Path) -> Path:
    return home / ".local" / "bin" / "sessionvault"


def on_path(home: Path) -> str:
    return os.pathsep.join([str(home / ".local" / "bin"), "/usr/bin"])


def test_a_missing_entry_becomes_a_link_with_how_to_undo_it(program: Path, home: Path) -> None:
    done = link.link(program, home=home, path_var=on_path(home))
    assert done.ok and dest(home).is_symlink() and Path(os.readlink(dest(home))) == program
    assert done.lines == [
        f"linked ~/.local/bin/sessionvault -> {program}: `sessionvault` runs from any folder"
        " (undo: rm ~/.local/bin/sessionvault)"
    ]


def test_our_link_is_kept_and_said_so(program: Path, home: Path) -> None:
    link.link(program, home=home, path_var=on_path(home))
    again = link.link(program, home=home, path_var=on_path(home))
    assert again.ok
    assert again.lines == [
        f"~/.local/bin/sessionvault already links to {program} (undo: rm ~/.local/bin/sessionvault)"
    ]


def test_a_file_of_someone_else_is_left_alone(program: Path, home: Path) -> None:
    dest(home).parent.mkdir(parents=True)
    dest(home).write_text("#!/bin/sh\necho pipx's\n")
    done = link.link(program, home=home, path_var=on_path(home))
    assert not done.ok and dest(home).read_text() == "#!/bin/sh\necho pipx's\n"
    assert done.lines[0] == f"left ~/.local/bin/sessionvault alone: it is not a link, not to {program}."
    assert done.lines[1] == f"  To run this checkout's instead: ln -sf {program} ~/.local/bin/sessionvault"


def test_a_link_to_another_checkout_is_left_alone(program: Path, home: Path, tmp_path: Path) -> None:
    dest(home).parent.mkdir(parents=True)
    dest(home).symlink_to(tmp_path / "other" / "sessionvault")  # dangling, too
    done = link.link(program, home=home, path_var=on_path(home))
    assert not done.ok and Path(os.readlink(dest(home))) == tmp_path / "other" / "sessionvault"
    assert f"it links to {tmp_path / 'other' / 'sessionvault'}, not to {program}" in done.lines[0]


@pytest.mark.parametrize(
    ("shell", "profile_file", "line"),
    [
        ("/bin/bash", "~/.bashrc", 'export PATH="$HOME/.local/bin:$PATH"'),
        ("/usr/bin/zsh", "~/.zshrc", 'export PATH="$HOME/.local/bin:$PATH"'),
        ("/usr/bin/fish", "~/.config/fish/config.fish", "fish_add_path $HOME/.local/bin"),
        ("/bin/dash", "~/.profile", 'export PATH="$HOME/.local/bin:$PATH"'),
    ],
)
def test_off_path_it_prints_the_exact_line_for_the_shell_profile(
    program: Path, home: Path, shell: str, profile_file: str, line: str
) -> None:
    done = link.link(program, home=home, path_var="/usr/bin:/bin", shell=shell)
    assert done.ok
    assert done.lines[1:] == [
        f"~/.local/bin is not on your PATH: add this line to {profile_file}, then open a new shell:",
        f"    {line}",
    ]


def test_an_earlier_sessionvault_on_path_is_pointed_out(program: Path, home: Path, tmp_path: Path) -> None:
    earlier = tmp_path / "elsewhere"
    earlier.mkdir()
    (earlier / "sessionvault").write_text("#!/bin/sh\n")
    (earlier / "sessionvault").chmod(0o755)
    done = link.link(program, home=home, path_var=os.pathsep.join([str(earlier), str(dest(home).parent)]))
    assert done.lines[-1] == (
        f"note: `sessionvault` on your PATH is {earlier / 'sessionvault'}, which comes before ~/.local/bin"
    )


def test_the_key_line_is_spelled_for_the_shell() -> None:
    assert profile.export_line("K", "v", "/usr/bin/fish") == "set -gx K v"
    assert profile.export_line("K", "v", "zsh") == "export K=v"
