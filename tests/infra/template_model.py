"""template.yaml as the tests read it: loaded with CloudFormation's short tags, each function's
properties as SAM merges them, the names the invariants speak of; and the SAM CLI, found as
$SAM_CLI, `sam` on PATH or the `samcli` module, run in the repository."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
PACKAGE = ROOT / "shared" / "sessionvault"
LOCK = ROOT / "infrastructure" / "layers" / "dependencies" / "requirements.txt"

FUNCTIONS = {
    "McpFunction": "functions/mcp",
    "AdminFunction": "functions/admin",
    "MaintenanceFunction": "functions/maintenance",
    "MigrateFunction": "functions/migrate",
}
# The functions that serve (and connect as a login role); the migrate function runs only when
# CloudFormation deploys, and its failure fails the deploy itself.
SERVING = ("McpFunction", "AdminFunction", "MaintenanceFunction")
MIGRATE = "MigrateFunction"
LAYERS = ("DependenciesLayer", "SharedCodeLayer")
RUNTIME = "python3.12"  # every function and both layers; infrastructure/lock_layer.py agrees
RUNTIME_GLIBC = (2, 34)  # python3.12+ run on Amazon Linux 2023
LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024


# ---------------------------------------------------------------- loading


def _fallback_loader() -> Any:
    """PyYAML loader that reads CloudFormation short tags (!Ref, !Sub, ...) as their long form."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def construct(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        if suffix == "Ref":
            return {"Ref": value}
        if suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
        return {f"Fn::{suffix}": value}

    Loader.add_multi_constructor("!", construct)
    return Loader


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    try:
        from cfnlint.decode import cfn_yaml
    except ImportError:  # cfn-lint not installed: same result through PyYAML
        import yaml

        return yaml.load(path.read_text(), Loader=_fallback_loader())
    return cfn_yaml.load(str(path))


def resources(tpl: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in tpl["Resources"].items() if v["Type"] == kind}


def fn_props(tpl: dict[str, Any], name: str) -> dict[str, Any]:
    """A function's properties with Globals.Function merged in (maps merged, as SAM does)."""
    merged = dict(tpl.get("Globals", {}).get("Function", {}))
    for key, value in tpl["Resources"][name]["Properties"].items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            inner = dict(merged[key])
            for k2, v2 in value.items():
                if isinstance(v2, dict) and isinstance(inner.get(k2), dict):
                    inner[k2] = {**inner[k2], **v2}
                else:
                    inner[k2] = v2
            merged[key] = inner
        else:
            merged[key] = value
    return merged


def env_of(tpl: dict[str, Any], name: str) -> dict[str, Any]:
    return fn_props(tpl, name).get("Environment", {}).get("Variables", {})


def ref(value: Any) -> str | None:
    return value.get("Ref") if isinstance(value, dict) else None


def strings_in(node: Any) -> list[str]:
    """Every literal string under node (Fn::Sub templates included)."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in strings_in(v)]
    if isinstance(node, list):
        return [s for v in node for s in strings_in(v)]
    return []


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def defines_handler(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "handler":
            return True
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "handler" for t in targets):
            return True
    return False


def sam_command() -> list[str] | None:
    if os.environ.get("SAM_CLI"):
        return [os.environ["SAM_CLI"]]
    if shutil.which("sam"):
        return [shutil.which("sam")]  # type: ignore[list-item]
    import importlib.util

    if importlib.util.find_spec("samcli") is not None:
        return [sys.executable, "-m", "samcli"]
    return None


def run_sam(args: list[str], timeout: int, python: str | None = None) -> subprocess.CompletedProcess[str]:
    """The SAM CLI in ROOT; `python`: an interpreter whose directory goes first on PATH, where
    the pip build workflow looks for python3.x."""
    cmd = sam_command()
    if cmd is None:
        pytest.skip("SAM CLI not found (set SAM_CLI, put sam on PATH or pip install aws-sam-cli)")
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0"}
    if python:
        env["PATH"] = os.pathsep.join([str(Path(python).parent), env.get("PATH", "")])
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.setdefault("AWS_REGION", env["AWS_DEFAULT_REGION"])
    return subprocess.run([*cmd, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
