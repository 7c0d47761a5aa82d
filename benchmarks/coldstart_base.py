"""A before/after pair for benchmarks/coldstart.py under one load: with COLDSTART_BASE=<git
revision>, the MCP function's layout is made a second time with that revision's `sessionvault`
package and functions/mcp/handler.py (the dependencies layer unchanged, bytecode compiled as
shared/Makefile compiles it), and the on-demand rows (init, first and warm save) are measured
for both, interleaved environment by environment. Two runs at different times on a shared
machine differ by more than most changes: the load moves init CPU by 100 ms.

    COLDSTART_BASE=b5a5c24 .venv/bin/python -m benchmarks.run --only coldstart"""

from __future__ import annotations

import dataclasses
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

from .common import ROOT

ENV = "COLDSTART_BASE"
LAPTOP_ONLY = ("local", "cli")  # as shared/Makefile leaves them out of the layer


def base_layout(layout: Any, python: str, root: Path) -> tuple[str, Any] | None:
    """(label, layout) of the revision COLDSTART_BASE names, or None when it is not set."""
    revision = os.environ.get(ENV, "").strip()
    if not revision:
        return None
    archive = subprocess.run(
        ["git", "archive", revision, "shared/sessionvault", "functions/mcp/handler.py"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    source = root / "base-source"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(source, filter="data")
    task, opt = root / "base-task", root / "base-opt"
    shutil.copytree(layout.task, task, symlinks=True)
    shutil.copytree(layout.opt_python, opt, symlinks=True)
    package = opt / "sessionvault"
    shutil.rmtree(package)
    skipped = shutil.ignore_patterns(*LAPTOP_ONLY, "__pycache__")
    shutil.copytree(source / "shared" / "sessionvault", package, ignore=skipped)
    compile_ = [python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash"]
    subprocess.run([*compile_, str(package)], check=True, capture_output=True)
    shutil.copy(source / "functions" / "mcp" / "handler.py", task / "handler.py")
    return f"at {revision}", dataclasses.replace(layout, task=task, opt_python=opt)
