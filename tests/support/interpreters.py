"""A working interpreter of a given Python version (the Lambda runtime's, python3.12): on PATH,
else a pyenv install. A pyenv shim of a version that is not selected is on PATH but exits 127,
so each candidate is run, not only found."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def runs_as(python: str, version: str) -> bool:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except OSError:
        return False
    return out.returncode == 0 and out.stdout.strip() == version


def find_interpreter(runtime: str) -> str | None:
    """`runtime` (e.g. python3.12) if it runs, else the newest pyenv install of its version."""
    version = runtime.removeprefix("python")
    found = shutil.which(runtime)
    if found and runs_as(found, version):
        return found
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for candidate in sorted(pyenv_root.glob(f"versions/{version}.*/bin/{runtime}"), reverse=True):
        if runs_as(str(candidate), version):
            return str(candidate)
    return None
