"""The CLI's connect tests use the client-config tests' fake home, project folder and Linux."""

from ..local.connect.conftest import _linux, cwd, home

__all__ = ["_linux", "cwd", "home"]
