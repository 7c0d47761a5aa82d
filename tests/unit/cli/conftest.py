"""The CLI's connect tests use the client-config tests' fake home, project folder, state folder
and Linux, and the same pinned `sessionvault` path."""

from ..local.conftest import _pinned_command
from ..local.setup.conftest import _linux, cwd, home, state

__all__ = ["_linux", "_pinned_command", "cwd", "home", "state"]
