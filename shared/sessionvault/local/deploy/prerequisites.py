"""What `sessionvault deploy` needs on this machine, checked before anything runs: one line
each, with the fix (the repository root, AWS credentials and a region, the SAM CLI, a Python
3.12 for sam build's pip workflow, make for the shared-code layer)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from sessionvault.errors import DeployFailed
from sessionvault.local.deploy.runner import Shell
from sessionvault.local.setup.checks import Check

TEMPLATE = "template.yaml"
RUNTIME = "python3.12"  # sam build's pip workflow runs the functions' runtime on this machine


@dataclass(frozen=True)
class Tools:
    sam: str
    region: str
    env: dict[str, str]  # PATH with a working python3.12 in front when it came from pyenv


def check_root(root: Path) -> Check:
    if (root / TEMPLATE).is_file() and (root / "functions").is_dir():
        return Check(True, f"repository root: {root}")
    version, source = _installed()
    return Check(
        False,
        f"{root} is not the SessionVault repository root (no {TEMPLATE}): deploy builds the stack from a"
        " checkout",
        f"either run it from a checkout of the version you run ({version}): git clone {source} &&"
        " cd sessionvault && sessionvault deploy; or deploy without one from the AWS Serverless"
        ' Application Repository (docs/deploy.md, "From the Serverless Application Repository")',
    )


def _installed() -> tuple[str, str]:
    """This install's version and the project's source URL, from the package's metadata."""
    try:
        meta = metadata.metadata("sessionvault-mcp")
    except metadata.PackageNotFoundError:
        return "unknown", "https://github.com/sessionvault/sessionvault"
    urls = dict(entry.split(", ", 1) for entry in meta.get_all("Project-URL") or [] if ", " in entry)
    return meta["Version"], urls.get("Source", "https://github.com/sessionvault/sessionvault")


def check_identity(shell: Shell) -> Check:
    argv = ["aws", "sts", "get-caller-identity", "--output", "json"]
    done = shell.look(argv)
    if done is None:
        return Check(
            False,
            "the AWS CLI is not installed (aws not on PATH)",
            "install AWS CLI v2: https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html",
        )
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no error output"])[-1]
        return Check(
            False,
            f"no working AWS credentials ({shlex.join(argv)}: {last})",
            "aws configure, or aws sso login",
        )
    who = json.loads(done.stdout or "{}")
    return Check(True, f"AWS identity: {who.get('Arn', '?')} (account {who.get('Account', '?')})")


def check_region(asked: str | None, saved: Mapping[str, Any], shell: Shell) -> tuple[Check, str]:
    env = shell.env
    region = asked or saved.get("region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if not region:
        done = shell.look(["aws", "configure", "get", "region"])
        region = done.stdout.strip() if done is not None and done.returncode == 0 else ""
    if not region:
        return Check(
            False, "no AWS region chosen", "pass --region eu-west-1, or aws configure set region eu-west-1"
        ), ""
    return Check(True, f"region: {region}"), str(region)


def check_sam(shell: Shell) -> tuple[Check, str]:
    """`sam` on PATH, else the one `make test` installs into .venv-sam."""
    bundled = shell.root / ".venv-sam" / "bin" / "sam"
    sam = shutil.which("sam", path=shell.env.get("PATH")) or (str(bundled) if bundled.exists() else "")
    done = shell.look([sam, "--version"]) if sam else None
    if done is None or done.returncode:
        fix = "pip install aws-sam-cli, or make .venv-sam/.installed-stamp (then .venv-sam/bin/sam is used)"
        return Check(False, "the SAM CLI is not installed (sam not on PATH, no .venv-sam/bin/sam)", fix), ""
    return Check(True, f"{done.stdout.strip() or 'SAM CLI'} ({sam})"), sam


def _runs(python: str, shell: Shell) -> bool:
    done = shell.look([python, "--version"])
    return done is not None and done.returncode == 0


def check_python(shell: Shell) -> tuple[Check, dict[str, str]]:
    """python3.12 on PATH if it runs, else a pyenv install of 3.12 put first on PATH for sam
    (a pyenv shim of a version that is not selected is on PATH but does not run)."""
    if _runs(RUNTIME, shell):
        return Check(True, f"{RUNTIME} on PATH"), shell.env
    pyenv = Path(shell.env.get("PYENV_ROOT") or Path.home() / ".pyenv")
    for found in sorted(pyenv.glob(f"versions/3.12.*/bin/{RUNTIME}"), reverse=True):
        if _runs(str(found), shell):
            env = {**shell.env, "PATH": os.pathsep.join([str(found.parent), shell.env.get("PATH", "")])}
            return Check(True, f"{RUNTIME} from pyenv: {found}"), env
    fix = "install Python 3.12 (e.g. pyenv install 3.12), or sam build --use-container by hand"
    return Check(False, f"{RUNTIME} does not run here: sam build's pip workflow needs it", fix), shell.env


def check_make(shell: Shell) -> Check:
    if shutil.which("make", path=shell.env.get("PATH")):
        return Check(True, "make (it builds the shared-code layer)")
    return Check(False, "make is not installed: sam build runs shared/Makefile", "install make")


def prerequisites(region: str | None, saved: Mapping[str, Any], shell: Shell) -> Tools:
    """Every check, one line each with its fix; stop when any failed."""
    root = check_root(shell.root)
    identity = check_identity(shell)
    region_check, region = check_region(region, saved, shell) if identity.ok else (None, "")
    sam_check, sam = check_sam(shell)
    python_check, env = check_python(shell)
    checks = [root, identity, region_check, sam_check, python_check, check_make(shell)]
    print("Prerequisites:", file=shell.out)
    for check in checks:
        if check is not None:
            print("\n".join("  " + line for line in check.lines()), file=shell.out)
    if any(check is not None and check.ok is False for check in checks):
        raise DeployFailed("prerequisites missing: fix the lines marked ✗ above, then run again")
    return Tools(sam, region, env)
