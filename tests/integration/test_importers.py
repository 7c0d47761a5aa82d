"""The importers (sessionvault/local/importers) on data the real tools made.

mcp-memory-service and basic-memory are installed from PyPI at pinned versions, each into a
virtualenv of its own under .venv/importers-venv/ (kept between runs, like the Makefile's npm
clients; a stamp file names the version and the interpreter), and their own code writes a store
in a temporary folder: mcp-memory-service's MemoryService (what its store_memory and versioned
update tools call) on its sqlite-vec backend, basic-memory's write_note tool. No model and no
network beyond the package index: mcp-memory-service runs on its hash-embedding fallback
(its base install has no PyTorch), basic-memory with semantic search off.

The two need different interpreters: basic-memory 0.24 requires Python >= 3.12 (found among
python3.12/3.13 on PATH and pyenv's versions), mcp-memory-service's sqlite-vec backend a Python
whose sqlite3 can load extensions (Debian's /usr/bin/python3 can; pyenv's builds here cannot).
A test is skipped only when no such interpreter exists or pip cannot install the package,
with the reason. Every imported record is then saved into a real vault and loaded back."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sessionvault.core import records
from sessionvault.errors import ValidationFailed
from sessionvault.local.data.importers import IMPORTERS, _common
from sessionvault.local.data.importers import mcp_memory_service as mms

from ..conftest import make_user

ROOT = Path(__file__).resolve().parents[2]
VENVS = ROOT / ".venv" / "importers-venv"
INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class Tool:
    pin: str
    min_python: tuple[int, int]
    needs_sqlite_extensions: bool


TOOLS = {
    "mcp-memory-service": Tool("mcp-memory-service==12.4.0", (3, 10), True),
    "basic-memory": Tool("basic-memory==0.24.1", (3, 12), False),
}


def _probe(python: str) -> tuple[tuple[int, int], bool] | None:
    """(version, whether its sqlite3 can load extensions), None if it does not run."""
    code = (
        "import sys, sqlite3; print(sys.version_info[0], sys.version_info[1],"
        " int(hasattr(sqlite3.connect(':memory:'), 'enable_load_extension')))"
    )
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=30, check=True)
        major, minor, ext = out.stdout.split()
        subprocess.run([python, "-m", "venv", "--help"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return (int(major), int(minor)), ext == "1"


def _interpreter(tool: Tool) -> tuple[str, str]:
    """A Python for the tool's venv, and what it is; skips (saying why) when there is none."""
    candidates = [
        "/usr/bin/python3",
        shutil.which("python3"),
        *(shutil.which(f"python3.{minor}") for minor in range(12, 16)),
        *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3"))),
    ]
    seen: dict[str, str] = {}
    for python in filter(None, candidates):
        real = os.path.realpath(python)
        if real in seen:
            continue
        probed = _probe(python)
        seen[real] = "no" if probed is None else f"{probed[0][0]}.{probed[0][1]}{'+ext' if probed[1] else ''}"
        if probed and probed[0] >= tool.min_python and (probed[1] or not tool.needs_sqlite_extensions):
            return python, f"{python} {seen[real]}"
    need = f"Python >= {tool.min_python[0]}.{tool.min_python[1]}"
    need += " whose sqlite3 can load extensions" if tool.needs_sqlite_extensions else ""
    pytest.skip(f"{tool.pin} needs {need}; found none ({seen})")


def _install(request: pytest.FixtureRequest, name: str) -> Path:
    """The tool's venv, installed once and kept (reinstalled when the stamp changes)."""
    tool = TOOLS[name]
    python, which = _interpreter(tool)
    venv, stamp = VENVS / name, VENVS / name / ".installed"
    want = f"{tool.pin}\n{which}\n"
    if stamp.exists() and stamp.read_text() == want and (venv / "bin" / "python").exists():
        return venv
    capture = request.config.pluginmanager.getplugin("capturemanager")

    def shout(line: str) -> None:  # on the terminal as it happens, not in the captured output
        with capture.global_and_fixture_disabled():
            print(line, flush=True)

    shout(f"\nInstalling {tool.pin} from PyPI into {venv} with {which} (first run only; kept between runs)")
    shutil.rmtree(venv, ignore_errors=True)
    started = time.monotonic()
    failure = ""
    for attempt in range(3):
        try:
            subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
            done = subprocess.run(
                [
                    str(venv / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "-q",
                    tool.pin,
                ],
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT_S,
                check=False,
            )
        except subprocess.SubprocessError as exc:
            failure = str(exc)
        else:
            if done.returncode == 0:
                break
            failure = "\n".join(done.stderr.strip().splitlines()[-5:])
        shutil.rmtree(venv, ignore_errors=True)
        time.sleep(5 * (attempt + 1))
    else:
        pytest.skip(f"{tool.pin} could not be installed from PyPI: {failure}")
    size = subprocess.run(
        ["du", "-sh", str(venv)], capture_output=True, text=True, check=False
    ).stdout.split()
    shout(f"Installed {tool.pin} in {time.monotonic() - started:.0f} s ({size[0] if size else '?'} on disk)")
    stamp.write_text(want)
    return venv


def _run(venv: Path, home: Path, script: str, stdin: Any, **env: str) -> Any:
    """`script` in the tool's venv with a throw-away HOME; its JSON answer on stdout."""
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}
    environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", NO_COLOR="1", **env)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script],
        input=json.dumps(stdin),
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def valid(args: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every record is what save_session accepts, and within its caps as given (nothing left
    for the server to cut)."""
    for one in args:
        parsed = records.parse(records.SaveArgs, one)
        # The save's own options (where it goes, whether it is offered) are not an importer's.
        own = {"branch", "commit", "handoff", "to_client", "to_person", "workspace"}
        assert parsed.model_dump(exclude=own) == one
    return args


def test_the_caps_are_the_records():
    assert (_common.MAX_TEXT, _common.MAX_ITEMS, _common.MAX_NAME, _common.MAX_CLIENT) == (
        records.MAX_TEXT,
        records.MAX_ITEMS,
        records.MAX_NAME,
        records.MAX_REPO,
    )
    assert set(IMPORTERS) == {"mcp-memory-service", "basic-memory", "claude-md", "agents-md", "gemini-md"}


def test_importing_the_package_stays_light():
    code = (
        "import sys; import sessionvault.local.data.importers;"
        " print(sorted(m for m in ('pydantic', 'yaml', 'psycopg', 'mcp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_long_text_is_cut_with_a_marker_that_fits():
    for length in (3999, 4000, 4001, 9999, 10_000, 123_456):
        cut = _common.cut("x" * length, where="a file")
        assert len(cut) == min(length, 4000)
        if length > 4000:
            missing = length - cut.index("\n…")
            assert cut.endswith(f"[cut: {missing} more characters; the whole text is in a file]")


# ---------------------------------------------------------------- mcp-memory-service

MMS_WRITER = """
import asyncio, json, os, sys
from mcp_memory_service.services.memory_service import MemoryService
from mcp_memory_service.storage.sqlite_vec import SqliteVecMemoryStorage

async def main(memories):
    storage = SqliteVecMemoryStorage(os.environ["MCP_MEMORY_SQLITE_PATH"])
    await storage.initialize()
    service = MemoryService(storage)
    made = {}
    for m in memories:
        out = await service.store_memory(m["content"], tags=m.get("tags"), memory_type=m.get("type"),
                                         metadata=m.get("metadata"), store=m.get("store", "default"))
        assert out["success"], out
        made[m["key"]] = out["memory"]["content_hash"] if "memory" in out else out["original_hash"]
        made[m["key"] + "-chunks"] = out.get("total_chunks", 1)
        if "evolve" in m:
            ok, msg, new = await service.evolve_memory(made[m["key"]], m["evolve"], reason=m["reason"])
            assert ok, msg
            made[m["key"] + "-v2"] = new
        if m.get("delete"):
            assert await service.delete_memory(made[m["key"]]), "not deleted"
    return made

print(json.dumps(asyncio.run(main(json.loads(sys.stdin.read())))))
"""

LONG = " ".join(f"Sentence {i} of the long design note about the sync engine." for i in range(120))
MEMORIES = [
    {
        "key": "decision",
        "content": "We chose Postgres SKIP LOCKED for the job queue because Redis was one more service",
        "tags": ["queue", "db"],
        "type": "decision",
    },
    {
        "key": "bug",
        "content": "test_sync fails on CI: the runner's timezone is UTC",
        "tags": "bug,ci",
        "type": "bug",
    },
    {"key": "todo", "content": "Rotate the staging TLS certificate before Friday", "type": "action_item"},
    {
        "key": "plain",
        "content": "The deploy script needs AWS_PROFILE set",
        "tags": ["deploy"],
        "evolve": "The deploy script needs AWS_PROFILE and AWS_REGION set",
        "reason": "the region was missing too",
    },
    {"key": "gone", "content": "A scratch memory the user deleted", "delete": True},
    {"key": "long", "content": LONG, "tags": ["design"]},
    {"key": "work", "content": "Quarterly report goes to finance", "store": "work"},
]


@pytest.fixture(scope="session")
def mms_venv(request: pytest.FixtureRequest) -> Path:
    return _install(request, "mcp-memory-service")


@pytest.fixture(scope="session")
def mms_store(mms_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("mcp-memory")
    db = folder / "sqlite_vec.db"
    made = _run(
        mms_venv,
        folder,
        MMS_WRITER,
        MEMORIES,
        MCP_MEMORY_ALLOW_HASH_EMBEDDINGS="1",  # its base install has no model: the hash fallback
        MCP_MEMORY_SQLITE_PATH=str(db),
        MCP_SQLITEVEC_MAX_CONTENT_LENGTH="2000",  # so the long memory is stored in chunks
    )
    return {"db": db, "made": made}


@pytest.mark.timeout(INSTALL_TIMEOUT_S * 3)
def test_mcp_memory_service_memories_become_sessions(mms_store: dict[str, Any]) -> None:
    made = mms_store["made"]
    assert made["long-chunks"] > 1  # the service really stored it in chunks
    imported = valid(IMPORTERS["mcp-memory-service"](mms_store["db"]))
    assert IMPORTERS["mcp-memory-service"](mms_store["db"].parent) == imported  # the folder, the same
    by_name: dict[str, list[dict[str, Any]]] = {}
    for one in imported:
        by_name.setdefault(one["name"], []).append(one)
    assert {one["client"] for one in imported} == {"mcp-memory-service"}
    assert not any("deleted" in one["summary"] for one in imported)  # the deleted memory stays out
    assert len(by_name) == len(MEMORIES) - 1

    (decision,) = by_name[f"mcp-memory/we-chose-postgres-skip-locked-for-{made['decision'][:8]}"]
    assert decision["summary"].startswith(MEMORIES[0]["content"])
    assert "Tags: queue, db" in decision["summary"] and "Type: decision" in decision["summary"]
    assert "Saved in mcp-memory-service: 20" in decision["summary"]
    assert decision["decisions"] == [
        {
            "decision": "We chose Postgres SKIP LOCKED for the job queue",
            "reason": "Redis was one more service",
        }
    ]
    (bug,) = by_name[f"mcp-memory/test-sync-fails-on-ci-the-runner-s-{made['bug'][:8]}"]
    assert bug["errors"] == [MEMORIES[1]["content"]] and "Tags: bug, ci" in bug["summary"]
    (todo,) = next(v for k, v in by_name.items() if k.endswith(made["todo"][:8]))
    assert todo["todos"] == [MEMORIES[2]["content"]]

    first, second = by_name[f"mcp-memory/the-deploy-script-needs-aws-profile-set-{made['plain'][:8]}"]
    assert first["summary"].startswith("The deploy script needs AWS_PROFILE set\n")
    assert second["summary"].startswith("The deploy script needs AWS_PROFILE and AWS_REGION set\n")
    assert "because: the region was missing too" in second["summary"]

    (long,) = by_name[f"mcp-memory/sentence-0-of-the-long-design-{made['long'][:8]}"]
    assert len(long["summary"]) <= 4000 and long["summary"].startswith(LONG[:1900])
    assert LONG[:3000] in long["summary"]  # the chunks are joined again, without their overlap
    assert "more characters; the whole text is in mcp-memory-service" in long["summary"]

    (work,) = next(v for k, v in by_name.items() if k.startswith("mcp-memory/work/"))
    assert work["summary"].startswith("Quarterly report goes to finance")


def test_mcp_memory_service_refuses_what_is_not_its_database(tmp_path: Path) -> None:
    with pytest.raises(ValidationFailed, match="no mcp-memory-service database"):
        IMPORTERS["mcp-memory-service"](tmp_path)
    (tmp_path / "sqlite_vec.db").write_text("not sqlite")
    with pytest.raises(ValidationFailed, match="mcp-memory-service"):
        IMPORTERS["mcp-memory-service"](tmp_path)


# ---------------------------------------------------------------- basic-memory

BM_WRITER = """
import json, sys
from basic_memory.cli.commands.command_utils import run_with_cleanup
from basic_memory.mcp.tools import write_note

async def main(notes):
    return [await write_note(output_format="json", **note) for note in notes]

print(json.dumps(run_with_cleanup(main(json.loads(sys.stdin.read())))))
"""

AUTH_NOTE = """We moved API sessions to signed JWTs.

## Observations
- [decision] Use JWT for API auth #auth (stateless scaling)
- [decision] Keep refresh tokens server-side
- [todo] Rotate the signing keys monthly
- [problem] Clock skew broke token expiry
- [tried] Leeway of 30 s: fixed the skew
- [fact] Tokens live 15 minutes

## Relations
- implements [[API Spec]]
- relates_to [[Session Store]]
"""


@pytest.fixture(scope="session")
def bm_venv(request: pytest.FixtureRequest) -> Path:
    return _install(request, "basic-memory")


@pytest.fixture(scope="session")
def bm_project(bm_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("basic-memory")
    notes = [
        {
            "title": "Auth refactor",
            "content": AUTH_NOTE,
            "directory": "decisions",
            "tags": ["auth", "security"],
        },
        {
            "title": "Release checklist",
            "content": "Before tagging:\n\n- [ ] bump the version\n- [x] changelog written\n"
            "- [plan] tag on Monday",
            "directory": "ops/releases",
            "note_type": "guide",
        },
    ]
    written = _run(
        bm_venv,
        home,
        BM_WRITER,
        notes,
        BASIC_MEMORY_HOME=str(home / "notes"),
        BASIC_MEMORY_CONFIG_DIR=str(home / "config"),
        BASIC_MEMORY_AUTO_UPDATE="false",
        BASIC_MEMORY_CLOUD_PROMO_OPT_OUT="true",
        LOGFIRE_IGNORE_NO_CONFIG="1",
    )
    return {"folder": home / "notes", "written": written}


@pytest.mark.timeout(INSTALL_TIMEOUT_S * 3)
def test_basic_memory_notes_become_sessions(bm_project: dict[str, Any]) -> None:
    written = {w["title"]: w for w in bm_project["written"]}
    assert (bm_project["folder"] / written["Auth refactor"]["file_path"]).is_file()
    imported = valid(IMPORTERS["basic-memory"](bm_project["folder"]))
    assert [one["name"] for one in imported] == [
        f"basic-memory/{written['Auth refactor']['permalink']}",
        f"basic-memory/{written['Release checklist']['permalink']}",
    ]
    auth, release = imported
    assert auth["summary"].startswith("# Auth refactor\n\nWe moved API sessions to signed JWTs.")
    assert "- [fact] Tokens live 15 minutes" in auth["summary"]  # kept where the note has it
    assert "- implements [[API Spec]]" in auth["summary"] and "Tags: auth, security" in auth["summary"]
    assert "[decision]" not in auth["summary"] and "[todo]" not in auth["summary"]
    assert auth["decisions"] == [
        {"decision": "Use JWT for API auth #auth", "reason": "stateless scaling"},
        {"decision": "Keep refresh tokens server-side", "reason": "not recorded in the note"},
    ]
    assert auth["todos"] == ["Rotate the signing keys monthly"]
    assert auth["errors"] == ["Clock skew broke token expiry"]
    assert auth["tried"] == ["Leeway of 30 s: fixed the skew"]
    assert auth["client"] == "basic-memory" and auth["repo"] == ""
    assert release["todos"] == ["bump the version"] and release["plan"] == ["tag on Monday"]
    assert "- [x] changelog written" in release["summary"] and "Type: guide" in release["summary"]
    one = IMPORTERS["basic-memory"](bm_project["folder"] / written["Auth refactor"]["file_path"])
    assert one == [auth]


# ---------------------------------------------------------------- CLAUDE.md, AGENTS.md, GEMINI.md


def _git(cwd: Path, *argv: str) -> None:
    subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def checkout(isolated_git: Path) -> Path:
    repo = isolated_git / "widget"
    (repo / "services" / "api").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "remote", "add", "origin", "git@github.com:Acme/Widget.git")
    (repo / "CLAUDE.md").write_text(
        "# Widget\n\nRun `make test`.\n\n- [ ] split the API module\n- [x] done\n"
    )
    (repo / "services" / "api" / "CLAUDE.md").write_text("The API service: FastAPI.\n" + "Rule. " * 1000)
    (repo / ".claude").mkdir()
    (repo / ".claude" / "CLAUDE.md").write_text("Project memory in the .claude folder.\n")
    (repo / "node_modules" / "dep").mkdir(parents=True)
    (repo / "node_modules" / "dep" / "CLAUDE.md").write_text("someone else's\n")
    (repo / ".venv").mkdir()
    (repo / ".venv" / "CLAUDE.md").write_text("not ours either\n")
    (repo / "AGENTS.md").write_text("# Agents\n\nUse ruff.\n")
    (repo / "GEMINI.md").write_text("# Gemini\n\nBe brief.\n")
    return repo


def test_instruction_files_become_one_session_each(checkout: Path) -> None:
    claude = valid(IMPORTERS["claude-md"](checkout))
    assert [one["name"] for one in claude] == [
        "instructions/github.com/acme/widget/.claude/CLAUDE.md",
        "instructions/github.com/acme/widget/CLAUDE.md",
        "instructions/github.com/acme/widget/services/api/CLAUDE.md",
    ]
    top = claude[1]
    assert top["repo"] == "github.com/acme/widget" and top["client"] == "claude-code"
    assert top["summary"].startswith("# Widget\n\nRun `make test`.")
    assert top["summary"].endswith("From CLAUDE.md in github.com/acme/widget")
    assert top["todos"] == ["split the API module"] and top["files"] == ["CLAUDE.md"]
    nested = claude[2]
    assert len(nested["summary"]) <= 4000 and "more characters; the whole text is in" in nested["summary"]
    assert nested["files"] == ["services/api/CLAUDE.md"]
    assert IMPORTERS["claude-md"](checkout / "CLAUDE.md") == [top]  # one file, the same session
    assert IMPORTERS["claude-md"](checkout) == claude  # the same input, the same list

    (agents,) = valid(IMPORTERS["agents-md"](checkout))
    assert agents["name"] == "instructions/github.com/acme/widget/AGENTS.md" and agents["client"] == "codex"
    (gemini,) = valid(IMPORTERS["gemini-md"](checkout))
    assert gemini["name"] == "instructions/github.com/acme/widget/GEMINI.md" and gemini["client"] == "gemini"


def test_an_instruction_file_outside_git_has_no_repo(isolated_git: Path) -> None:
    folder = isolated_git / "notes"
    folder.mkdir()
    (folder / "AGENTS.md").write_text("Loose instructions.\n")
    (one,) = valid(IMPORTERS["agents-md"](folder / "AGENTS.md"))
    assert (
        one["repo"] == ""
        and one["name"].startswith("instructions/")
        and one["name"].endswith("notes/AGENTS.md")
    )
    with pytest.raises(ValidationFailed, match=r"no CLAUDE\.md"):
        IMPORTERS["claude-md"](folder / "missing")


# ---------------------------------------------------------------- into a real vault


@pytest.fixture
def every_import(request: pytest.FixtureRequest, checkout: Path) -> Iterator[list[dict[str, Any]]]:
    """What every importer made here: the tools' when they could be installed."""
    found = IMPORTERS["claude-md"](checkout) + IMPORTERS["agents-md"](checkout)
    for fixture, source, key in (
        ("mms_store", "mcp-memory-service", "db"),
        ("bm_project", "basic-memory", "folder"),
    ):
        try:
            store = request.getfixturevalue(fixture)
        except pytest.skip.Exception:
            continue
        found += IMPORTERS[source](store[key])
    yield found


@pytest.mark.timeout(INSTALL_TIMEOUT_S * 3)
def test_every_import_saves_and_loads_back_and_a_second_import_adds_nothing(runtime, every_import) -> None:
    user = make_user(runtime)
    last: dict[str, dict[str, Any]] = {}
    for args in every_import:
        saved = runtime.vault.save(user.principal, records.parse(records.SaveArgs, args))
        assert saved["redacted"] == [] and saved["name"] == args["name"]
        last[args["name"]] = args
    for name, args in last.items():
        loaded = runtime.vault.load(user.principal, records.parse(records.LoadArgs, {"name": name}))
        assert {k: loaded[k] for k in records.RECORD_FIELDS} == {k: args[k] for k in records.RECORD_FIELDS}
        assert (loaded["repo"], loaded["client"]) == (args["repo"], args["client"])
        listed = [one["name"] for one in every_import].count(name)
        assert len(loaded["versions"]) == listed  # a revised memory: its versions, in order
        again = runtime.vault.save(user.principal, records.parse(records.SaveArgs, args))
        assert again.get("unchanged") is True, name  # a second import adds no version


def test_mms_mapping_tables_do_not_overlap() -> None:
    kinds = [mms._DECISION, mms._ERROR, mms._TODO, mms._PLAN, mms._TRIED]
    assert sum(len(k) for k in kinds) == len(set().union(*kinds))
