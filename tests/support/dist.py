"""The release's files, made as the release makes them: `make dist` (python -m build: the sdist,
then the wheel from it; the model's wheel beside them; twine check --strict on all three),
once per test run, into a folder of its own. Under the release workflow's `make
release-check`, $SESSIONVAULT_DIST names the folder it built and will publish, and those very
files are tested.

The test never installs anything into this checkout's virtualenv: make is told to take the
installs as done (-o), so a missing model wheel is a clear failure, not a download."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIST_ENV = "SESSIONVAULT_DIST"
MODEL_WHEEL = "build/wheels/sessionvault_minilm-0.1.0-py3-none-any.whl"  # = the Makefile's MODEL_WHEEL
MAKE_DIST = ["make", "-o", ".venv/.installed-test-stamp", "-o", MODEL_WHEEL, "dist"]


@dataclass(frozen=True)
class Release:
    folder: Path
    wheel: Path  # sessionvault_mcp-<version>-py3-none-any.whl
    sdist: Path  # sessionvault_mcp-<version>.tar.gz
    model: Path  # sessionvault_minilm-<version>-py3-none-any.whl
    log: str  # what make printed (twine's verdicts among it); "" for a given folder


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, f"{folder}: expected one {pattern}, found {[p.name for p in found]}"
    return found[0]


@functools.cache
def release() -> Release:
    given = os.environ.get(DIST_ENV)
    log = ""
    if given:
        folder = Path(given)
    else:
        base = Path(tempfile.mkdtemp(prefix="sv-dist-"))
        atexit.register(shutil.rmtree, base, True)
        folder = base / "dist"
        done = subprocess.run(
            [*MAKE_DIST, f"DIST={folder}"], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
        )
        log = done.stdout + done.stderr
        assert done.returncode == 0, log[-4000:]
    return Release(
        folder=folder,
        wheel=_one(folder, "sessionvault_mcp-*.whl"),
        sdist=_one(folder, "sessionvault_mcp-*.tar.gz"),
        model=_one(folder, "sessionvault_minilm-*.whl"),
        log=log,
    )
