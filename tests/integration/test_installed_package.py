"""The package as a user gets it: a wheel built from the source, installed (not editable) into a
fresh virtualenv, migrates a fresh database. The migrations are package data
(sessionvault/db/sql/*.sql): a wheel that left them out would find none and must fail loudly.

Nothing is downloaded: the wheel is built with this interpreter's setuptools (no build
isolation, no index), installed with --no-deps --no-index, and the fresh venv finds the
third-party dependencies through a .pth line naming this venv's site-packages, placed after its
own site-packages, so the installed sessionvault wins and the source tree is never on sys.path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
import zipfile
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from sessionvault.db.migrations import migration_files
from sessionvault.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "shared"
PIP = [sys.executable, "-m", "pip"]  # this venv's pip and setuptools: nothing is downloaded
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
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a clean copy of the source (a stale build/ in the work tree could
    otherwise add files that no longer exist), with no network."""
    work = tmp_path_factory.mktemp("wheel")
    project = work / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, project / name)
    shutil.copytree(
        SOURCE, project / "shared", ignore=shutil.ignore_patterns("__pycache__", "*.py[co]", "*.egg-info")
    )
    wheel_args = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
    run([*PIP, *wheel_args, "-w", str(work / "dist"), str(project)], env={**os.environ, "PIP_NO_INPUT": "1"})
    (built,) = (work / "dist").glob("sessionvault-*.whl")
    return built


@pytest.fixture(scope="module")
def installed_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed (not editable); returns its python."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
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
    assert "sessionvault/db/sql/0001_core.sql" in names
    assert "sessionvault/db/migrations.py" in names


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
