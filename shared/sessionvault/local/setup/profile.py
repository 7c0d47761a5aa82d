"""The shell profile a line goes into, and that shell's spelling of it: for the notes that tell
the user what to add there (the API key for `connect`, ~/.local/bin on PATH for `link`)."""

from __future__ import annotations

import os
from pathlib import Path

_PROFILES = {"zsh": "~/.zshrc", "bash": "~/.bashrc", "fish": "~/.config/fish/config.fish"}


def shell_name(shell: str | None = None) -> str:
    """`shell` (a path or a name), else $SHELL's name; "sh" when unknown."""
    return Path(shell or os.environ.get("SHELL") or "sh").name


def profile(shell: str | None = None) -> str:
    return _PROFILES.get(shell_name(shell), "~/.profile")


def export_line(name: str, value: str, shell: str | None = None) -> str:
    """The line that sets the environment variable `name` in every new shell."""
    return f"set -gx {name} {value}" if shell_name(shell) == "fish" else f"export {name}={value}"


def path_line(folder: str, shell: str | None = None) -> str:
    """The line that puts `folder` (e.g. "$HOME/.local/bin") first on PATH."""
    if shell_name(shell) == "fish":
        return f"fish_add_path {folder}"
    return f'export PATH="{folder}:$PATH"'
