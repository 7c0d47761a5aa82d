"""The release, as files that must agree: the version (one literal, sessionvault.__version__,
which the build writes into the metadata) and what carries it (`sessionvault --version`,
template.yaml's Serverless Application Repository metadata, server.json, CHANGELOG.md's first
heading); the application metadata against the package's (licence, README, home and source
URLs) and SAR's published limits; and .github/workflows/release.yml: it runs the `make`
targets these tests run, publishes with no stored credential, and passes the workflow linters
`make test` runs (which must also refuse a broken workflow)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import yaml

import sessionvault
from sessionvault.cli import main as cli
from tests.infra.template_model import load_template
from tests.support.dist import MAKE_DIST

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
BIN = ROOT / ".venv" / "bin"


def project() -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return data


def workflow() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return data


def runs(job: str) -> list[str]:
    return [step["run"].strip() for step in workflow()["jobs"][job]["steps"] if "run" in step]


def uses(job: str) -> list[str]:
    return [step["uses"] for step in workflow()["jobs"][job]["steps"] if "uses" in step]


def makefile_recipe(target: str) -> list[str]:
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"{target}:")))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


# ---------------------------------------------------------------- one version


def test_one_version_everywhere() -> None:
    version = sessionvault.__version__
    pyproject = project()
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sessionvault.__version__"}
    assert cli.version() == version  # the installed distribution's metadata (this checkout's)
    app = load_template()["Metadata"]["AWS::ServerlessRepo::Application"]
    assert app["SemanticVersion"] == version
    assert json.loads((ROOT / "server.json").read_text())["version"] == version
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), flags=re.MULTILINE)
    assert headings[0] == version  # the changelog starts with this release


def test_version_flag_prints_the_installed_metadata() -> None:
    done = subprocess.run(
        [str(BIN / "sessionvault"), "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == f"sessionvault {sessionvault.__version__}"


# ---------------------------------------------------------------- the SAR application


def test_the_serverless_application_metadata_is_complete_and_agrees_with_the_package() -> None:
    app = load_template()["Metadata"]["AWS::ServerlessRepo::Application"]
    meta = project()["project"]
    assert set(app) == {
        "Name",
        "Description",
        "Author",
        "SpdxLicenseId",
        "LicenseUrl",
        "ReadmeUrl",
        "Labels",
        "HomePageUrl",
        "SourceCodeUrl",
        "SemanticVersion",
    }
    assert app["SpdxLicenseId"] == meta["license"]
    assert app["LicenseUrl"] == meta["license-files"][0] and (ROOT / app["LicenseUrl"]).is_file()
    assert app["ReadmeUrl"] == meta["readme"] and (ROOT / app["ReadmeUrl"]).is_file()
    assert app["HomePageUrl"] == meta["urls"]["Homepage"]
    assert app["SourceCodeUrl"] == meta["urls"]["Source"]
    # SAR's published limits (the SAM developer guide, "Metadata section properties").
    assert re.fullmatch(r"[a-zA-Z0-9\-]{1,140}", app["Name"])
    assert 1 <= len(app["Description"]) <= 256
    assert re.fullmatch(r"[a-z0-9](([a-z0-9]|-(?!-))*[a-z0-9])?", app["Author"]) and len(app["Author"]) <= 127
    assert 1 <= len(app["Labels"]) <= 10
    assert all(re.fullmatch(r"[a-zA-Z0-9+\-_:/@]{1,127}", label) for label in app["Labels"])
    for path in (app["LicenseUrl"], app["ReadmeUrl"]):
        assert (ROOT / path).stat().st_size < 5 * 1024 * 1024


# ---------------------------------------------------------------- the workflow


def test_the_workflow_builds_and_tests_with_the_targets_the_tests_run() -> None:
    assert workflow()[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads `on` as True
    build = runs("build")
    assert "make dist" in build and "make release-check" in build
    assert build.index("make dist") < build.index("make release-check")
    assert MAKE_DIST[-1] == "dist"  # tests/support/dist.py builds with the same target
    # `make dist` is what the test's build runs: the sdist, the wheel from it, twine.
    recipe = makefile_recipe("dist")
    assert any("-m build --no-isolation" in line for line in recipe)
    assert any("twine check --strict" in line for line in recipe)
    # `make release-check` runs these tests, and each exists.
    release_tests = re.search(
        r"^RELEASE_TESTS := (.*?)\n(?!\s)", (ROOT / "Makefile").read_text().replace("\\\n", " "), re.M | re.S
    )
    assert release_tests
    files = release_tests.group(1).split()
    assert "tests/e2e/test_install.py" in files and "tests/infra/test_release.py" in files
    assert all((ROOT / f).is_file() for f in files), files


def test_the_workflow_publishes_with_no_stored_credential() -> None:
    text = WORKFLOW.read_text()
    assert "secrets." not in text and "password" not in text and "api-token" not in text
    jobs = workflow()["jobs"]
    assert workflow()["permissions"] == {}  # each job asks for what it needs
    assert jobs["pypi"]["permissions"] == {"id-token": "write"}  # PyPI trusted publishing
    assert jobs["pypi"]["environment"] == "pypi" and jobs["pypi"]["needs"] == "build"
    assert [u.split("@")[0] for u in uses("pypi")][-1] == "pypa/gh-action-pypi-publish"
    registry = runs("mcp-registry")
    assert "./mcp-publisher login github-oidc" in registry
    assert "./mcp-publisher publish server.json" in registry
    assert jobs["mcp-registry"]["needs"] == "pypi"  # the registry reads the PyPI description
    sam = runs("sam-application")
    assert ".venv-sam/bin/sam build" in sam
    assert any(r.startswith(".venv-sam/bin/sam package") and "packaged.yaml" in r for r in sam)
    assert any("gh release create" in r and "packaged.yaml" in r for r in sam)
    assert "make .venv-sam/.installed-stamp" in sam  # the SAM CLI as make test installs it
    for job in jobs:
        for action in uses(job):
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", action), f"{job}: {action} is not pinned"
        for step in jobs[job]["steps"]:
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False


def lint_commands(folder: Path) -> list[list[str]]:
    """The workflow linters exactly as `make test` runs them, on `folder`'s workflows."""
    commands = []
    for line in makefile_recipe("test"):
        if "check-jsonschema" in line or "zizmor" in line:
            line = line.replace("$(BIN)", str(BIN)).replace(".github/workflows", str(folder))
            argv = shlex.split(line)
            commands.append(
                [
                    a
                    for part in argv
                    for a in (sorted(map(str, folder.glob("*.yml"))) if "*" in part else [part])
                ]
            )
    assert len(commands) == 2, commands
    return commands


def lint(folder: Path) -> list[subprocess.CompletedProcess[str]]:
    return [
        subprocess.run(c, capture_output=True, text=True, timeout=120, cwd=ROOT)
        for c in lint_commands(folder)
    ]


def test_the_workflow_passes_the_linters_make_test_runs() -> None:
    results = lint(WORKFLOW.parent)
    assert [r.returncode for r in results] == [0, 0], [r.stdout + r.stderr for r in results]


def test_the_linters_refuse_a_broken_workflow(tmp_path: Path) -> None:
    """Each linter can fail: a step that pastes a pushed commit's message into a shell (script
    injection) and a step with a key no workflow has."""
    data = yaml.safe_load(WORKFLOW.read_text())
    (tmp_path / "bad-key.yml").write_text(
        WORKFLOW.read_text().replace("runs-on: ubuntu-24.04", "runs_on: x", 1)
    )
    injected = dict(data)
    injected["jobs"] = {"build": dict(data["jobs"]["build"])}
    injected["jobs"]["build"]["steps"] = [
        *data["jobs"]["build"]["steps"],
        {"run": "echo ${{ github.event.head_commit.message }}"},
    ]
    injected["on"] = injected.pop(True)
    injection = tmp_path / "injection" / ".github" / "workflows"  # where zizmor looks
    injection.mkdir(parents=True)
    (injection / "release.yml").write_text(yaml.safe_dump(injected, sort_keys=False))
    schema, _ = lint(tmp_path)
    assert schema.returncode != 0, schema.stdout
    _, zizmor = lint(injection)
    assert zizmor.returncode != 0 and "template-injection" in zizmor.stdout + zizmor.stderr


def test_the_model_package_is_published_before_the_package_that_needs_it() -> None:
    """`sessionvault-mcp[local]` names `sessionvault-minilm`: published first (skip-existing, it
    keeps its version across releases), from a folder holding only it; then the rest of dist/."""
    steps = workflow()["jobs"]["pypi"]["steps"]
    publishes = [s for s in steps if s.get("uses", "").startswith("pypa/gh-action-pypi-publish@")]
    assert [p["with"]["packages-dir"] for p in publishes] == ["model-dist/", "dist/"]
    assert all(p["with"]["skip-existing"] is True for p in publishes)
    moved = next(s["run"] for s in steps if "run" in s and "model-dist" in s["run"])
    assert steps.index(next(s for s in steps if s.get("run") == moved)) < steps.index(publishes[0])
    assert "mv dist/sessionvault_minilm-*.whl model-dist/" in moved
