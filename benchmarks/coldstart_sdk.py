"""The AWS SDK's clients against the package's own (issue 33, item 4), for benchmarks/coldstart.py.

The package reads its secrets at init and calls KMS on a first save with one signed stdlib request
each (`sessionvault.aws_secrets`, `aws_signing`), and takes boto3's clients instead wherever
boto3 is loaded already. This layout is the built one with a `handler.py` that imports boto3
first and then the function's own handler: the same code on the SDK's path (botocore's signer,
credential chain, endpoint resolution and JSON protocol), so that the on-demand rows (init,
first and warm save) measure one against the other in the Lambda layout, interleaved."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

LABEL = "boto3 clients"
SHIM = '''"""The function's handler, with boto3 loaded first: the package then reads its secrets and
calls KMS through boto3's clients (benchmarks/coldstart_sdk.py)."""

import boto3  # noqa: F401

from function_handler import *  # noqa: F403
'''


def sdk_layout(layout: Any, root: Path) -> tuple[str, Any]:
    """(label, layout): `layout` with boto3 imported ahead of the function's handler."""
    task = root / "sdk-task"
    shutil.copytree(layout.task, task, symlinks=True)
    (task / "handler.py").rename(task / "function_handler.py")
    (task / "handler.py").write_text(SHIM)
    return LABEL, dataclasses.replace(layout, task=task)
