"""`sessionvault sessions list|show|search|history|diff|delete`, `export` and `import ndjson|
<importer>` against the real server over real HTTP: human output by default, the API's JSON
with --json, the server and key chosen as `connect` chooses them, and the API's refusals as
one clear line (exit 2), never a traceback."""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from sessionvault import names, telemetry
from sessionvault.cli import main as cli
from sessionvault.cli import sessions as sessions_cli
from sessionvault.core import records
from sessionvault.local.data import export_files
from sessionvault.local.host import target
from sessionvault.local.remote import api_client, batch_import
from sessionvault.local.remote.transport import Api
from sessionvault.service import accounts, portability

from ..conftest import admin_db, make_user
from .test_api import save

REPO = "github.com/acme/widget"
# Built now, before conftest's autouse fixture points its handler at the current stdout: built
# lazily by a server thread's first request, it would keep a captured stream that closes.
telemetry.logger()


@pytest.fixture(autouse=True)
def _server_logs_off() -> Any:
    """The server threads log every request to this process's stdout, which is also the
    command's: silenced here (the command's own output is what these tests read)."""
    logger = logging.getLogger("sessionvault")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No saved deployment, no URL or key from the developer's environment."""
    state = tmp_path / "state"
    monkeypatch.setenv(names.HOME_ENV, str(state))
    for var in (names.URL_ENV, names.KEY_ENV, "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    return state


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def column(out: str, title: str) -> list[str]:
    """One column of a table that `out` prints (cells may be empty: found by the header)."""
    header, *rows = out.splitlines()
    start = header.index(title)
    rest = header[start + len(title) :]
    end = start + len(title) + (len(rest) - len(rest.lstrip())) if rest.strip() else None
    return [row[start:end].strip() for row in rows]


def sv(capsys: pytest.CaptureFixture[str], server: Any, key: str, *argv: str) -> tuple[int, str, str]:
    return run(capsys, *argv, "--url", server.url, "--key", key)


@pytest.fixture
def history(server, runtime) -> Any:
    """A user with a session of three versions (the last one offered as a handoff) and another."""
    user = make_user(runtime)
    save(server.url, user.key, name="codex/s1", summary="first try", repo=REPO, plan=["read the code"])
    save(
        server.url,
        user.key,
        name="codex/s1",
        summary="second try",
        repo=REPO,
        plan=["read the code", "write the test"],
        decisions=[{"decision": "use JWT", "reason": "stateless servers"}],
        todos=["rotate keys"],
        files=["auth.py"],
        errors=["KeyError: 'exp'"],
        tried=["sessions in redis: too slow"],
        branch="feature/jwt",
        commit="0123456789abcdef",
        client="codex",
    )
    save(
        server.url,
        user.key,
        name="codex/s1",
        summary="third try",
        repo=REPO,
        plan=["read the code", "write the test", "ship"],
        decisions=[{"decision": "use JWT", "reason": "stateless servers"}],
        client="codex",
        to_client="gemini",
    )
    save(server.url, user.key, name="notes", summary="other repo \x1b[2J notes", repo="github.com/acme/other")
    return user


# --------------------------------------------------------------------------- sessions ...


def test_list_is_a_table_filtered_by_repo_and_json_is_the_apis(capsys, server, history) -> None:
    code, out, err = sv(capsys, server, history.key, "sessions", "list")
    assert code == 0, err
    header, *rows = out.splitlines()
    assert header.split() == ["UPDATED", "VER", "CLIENT", "NAME", "REPO", "NOTE", "PREVIEW"]
    assert column(out, "NAME") == ["notes", "codex/s1"]  # newest first
    assert column(out, "CLIENT") == ["", "codex"] and column(out, "VER") == ["1", "3"]
    assert "handoff open" in rows[1] and "\x1b" not in out  # a stored escape is shown, not sent
    code, out, _ = sv(
        capsys, server, history.key, "sessions", "list", "--repo", "git@github.com:Acme/Widget.git"
    )
    assert column(out, "NAME") == ["codex/s1"]
    code, out, _ = sv(capsys, server, history.key, "sessions", "list", "--json")
    listed = json.loads(out)
    assert [s["name"] for s in listed["sessions"]] == ["notes", "codex/s1"]
    assert listed["sessions"][1]["handoff"]["state"] == "open"


def test_list_and_show_say_which_version_is_offered(capsys, server, runtime) -> None:
    """An offer stays with the version it was made on: v2 saved after v1 was offered lists as
    v2 with "handoff open for v1", not as an offer of v2."""
    user = make_user(runtime)
    save(server.url, user.key, name="feature", summary="offered", repo=REPO, to_client="gemini")
    save(server.url, user.key, name="feature", summary="went on", repo=REPO)
    code, out, err = sv(capsys, server, user.key, "sessions", "list")
    assert code == 0, err
    assert column(out, "VER") == ["2"] and column(out, "NOTE") == ["handoff open for v1"]
    code, out, _ = sv(capsys, server, user.key, "sessions", "show", "feature")
    assert "version 2, saved" in out and "Handoff:" not in out  # each version shows its own
    code, out, _ = sv(capsys, server, user.key, "sessions", "show", "feature", "--version", "1")
    assert "Handoff:  offered to gemini, not accepted yet" in out


def test_list_pages_with_limit_and_all(capsys, server, history, monkeypatch) -> None:
    code, out, err = sv(capsys, server, history.key, "sessions", "list", "--limit", "1")
    assert code == 0 and len(out.splitlines()) == 2 and "--all" in err
    monkeypatch.setattr(sessions_cli, "LIST_PAGE", 1)  # every page one session: --all follows the cursor
    code, out, err = sv(capsys, server, history.key, "sessions", "list", "--all", "--json")
    assert [s["name"] for s in json.loads(out)["sessions"]] == ["notes", "codex/s1"]


def test_show_prints_the_session_as_text(capsys, server, history) -> None:
    code, out, err = sv(capsys, server, history.key, "sessions", "show", "codex/s1", "--version", "2")
    assert code == 0, err
    assert out.startswith("codex/s1\nversion 2 (the latest is 3), saved ")
    for expected in (
        "Summary:\n  second try",
        "Plan:\n  1. read the code\n  2. write the test",
        "Decisions:\n  - use JWT\n    because: stateless servers",
        "To do:\n  - rotate keys",
        "Files:\n  - auth.py",
        "Errors:\n  - KeyError: 'exp'",
        "Tried:\n  - sessions in redis: too slow",
        f"Repo:     {REPO}",
        "Branch:   feature/jwt",
        "Commit:   0123456789abcdef",
        "Client:   codex",
    ):
        assert expected in out, expected
    code, out, _ = sv(capsys, server, history.key, "sessions", "show", "codex/s1")
    assert "version 3, saved" in out and "Handoff:  offered to gemini, not accepted yet, until " in out
    code, out, _ = sv(capsys, server, history.key, "sessions", "show", "notes")
    assert "other repo \\x1b[2J notes" in out and "\x1b" not in out
    code, out, _ = sv(capsys, server, history.key, "sessions", "show", "codex/s1", "--json")
    shown = json.loads(out)
    assert (shown["summary"], shown["versions"], shown["handoff"]["to_client"]) == (
        "third try",
        [3, 2, 1],
        "gemini",
    )


def test_history_and_diff_between_versions(capsys, server, history) -> None:
    code, out, err = sv(capsys, server, history.key, "sessions", "history", "codex/s1")
    assert code == 0, err
    assert out.splitlines()[0].split() == ["VER", "SAVED", "CLIENT", "BRANCH", "COMMIT", "HANDOFF", "SUMMARY"]
    assert column(out, "VER") == ["3", "2", "1"] and column(out, "HANDOFF") == ["open", "", ""]
    assert column(out, "BRANCH") == ["", "feature/jwt", ""] and column(out, "COMMIT")[1] == "0123456789"
    assert column(out, "SUMMARY") == ["third try", "second try", "first try"]

    code, out, err = sv(capsys, server, history.key, "sessions", "diff", "codex/s1")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("--- codex/s1 v2 (") and lines[1].startswith("+++ codex/s1 v3 (")
    assert "-  second try" in lines and "+  third try" in lines and "+  3. ship" in lines
    assert "-  - rotate keys" in lines and "+Handoff:  offered to gemini, not accepted yet, until" in out
    assert " Decisions:" in lines  # unchanged context
    code, out, _ = sv(capsys, server, history.key, "sessions", "diff", "codex/s1", "1", "3")
    assert "-  first try" in out.splitlines() and "+  third try" in out.splitlines()
    code, out, _ = sv(capsys, server, history.key, "sessions", "diff", "codex/s1", "1", "--json")
    shown = json.loads(out)
    assert (shown["from"]["version"], shown["to"]["version"]) == (1, 3) and "+  third try" in shown["diff"]

    code, _, err = sv(capsys, server, history.key, "sessions", "diff", "codex/s1", "7")
    assert code == 2 and "has no version 7; it keeps versions 1, 2, 3" in err
    code, _, err = sv(capsys, server, history.key, "sessions", "diff", "notes")
    assert code == 2 and "has only version 1: nothing to compare" in err


def test_delete_asks_on_a_terminal_and_needs_yes_otherwise(
    capsys, server, runtime, history, monkeypatch
) -> None:
    code, _, err = sv(capsys, server, history.key, "sessions", "delete", "notes")
    assert code == 2 and "stdin is not a terminal; add --yes" in err

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal("not it\n"))
    code, _, err = sv(capsys, server, history.key, "sessions", "delete", "notes")
    assert code == 1 and "not deleted" in err
    loaded = runtime.vault.load(history.principal, records.parse(records.LoadArgs, {"name": "notes"}))
    assert loaded["found"]
    monkeypatch.setattr(sys, "stdin", Terminal("notes\n"))
    code, out, err = sv(capsys, server, history.key, "sessions", "delete", "notes")
    assert (code, out) == (0, "deleted notes (1 version(s))\n") and "type 'notes'" in err
    code, _, err = sv(capsys, server, history.key, "sessions", "delete", "notes", "--yes")
    assert code == 2 and "no session by that name" in err
    code, out, _ = sv(capsys, server, history.key, "sessions", "delete", "codex/s1", "--yes", "--json")
    assert json.loads(out) == {"deleted": True, "name": "codex/s1", "versions_deleted": 3}


def test_the_apis_refusals_are_one_line(capsys, server, runtime, history) -> None:
    code, _, err = sv(capsys, server, "sv_live_" + "x" * 32, "sessions", "list")
    assert code == 2 and "refused the API key (401)" in err and "Traceback" not in err
    reader = make_user(runtime, scopes=("read",))
    save(server.url, history.key, name="x", summary="s")
    code, _, err = sv(capsys, server, reader.key, "sessions", "delete", "x", "--yes")
    assert code == 2 and "'delete' scope" in err
    code, _, err = sv(capsys, server, history.key, "sessions", "search", "the")
    assert code == 2 and "semantic search is unavailable" in err  # no embeddings here, and no word to match
    code, _, err = sv(capsys, server, history.key, "sessions", "show", "nope")
    assert code == 2 and "nope" in err
    code, _, err = run(capsys, "sessions", "list", "--url", server.url)
    assert code == 2 and "no API key" in err
    code, _, err = run(capsys, "sessions", "list", "--url", "http://example.com/mcp", "--key", history.key)
    assert code == 2 and "refusing to send the API key over plain http" in err
    closed = server.url.replace(str(server.port), "9")  # the discard port: nothing listens
    code, _, err = run(capsys, "sessions", "list", "--url", closed, "--key", history.key)
    assert code == 2 and "cannot reach http://127.0.0.1:9" in err and "sessionvault dev" in err


def test_search_finds_by_meaning_and_says_why(capsys, local_server, local_runtime) -> None:
    user = make_user(local_runtime)
    save(
        local_server.url, user.key, name="jwt", summary="Moved login to JSON web tokens with refresh rotation"
    )
    save(local_server.url, user.key, name="css", summary="Dark mode colours for the settings page")
    code, out, err = sv(capsys, local_server, user.key, "sessions", "search", "auth tokens")
    assert code == 0, err
    assert out.splitlines()[0].split() == ["SCORE", "MATCHED", "NAME", "VER", "SAVED", "REPO", "SUMMARY"]
    assert out.splitlines()[1].split()[1:3] in (["meaning", "jwt"], ["both", "jwt"])
    code, out, _ = sv(
        capsys, local_server, user.key, "sessions", "search", "auth tokens", "--json", "--limit", "1"
    )
    assert [r["name"] for r in json.loads(out)["results"]] == ["jwt"]


def test_url_and_key_come_from_the_environment_or_the_saved_deployment(
    capsys, server, history, _isolated, monkeypatch
) -> None:
    monkeypatch.setenv(names.URL_ENV, server.url)
    monkeypatch.setenv(names.KEY_ENV, history.key)
    code, out, err = run(capsys, "sessions", "list")
    assert code == 0 and "codex/s1" in out, err
    monkeypatch.delenv(names.URL_ENV)
    monkeypatch.delenv(names.KEY_ENV)
    target.save_deployment(_isolated, target.Deployment(server.url, "stack", "eu-west-1"), history.key)
    code, out, err = run(capsys, "sessions", "list")
    assert code == 0 and "codex/s1" in out, err
    # The deployment's key goes to the deployment only: another URL gets no key.
    code, _, err = run(capsys, "sessions", "list", "--url", server.url.replace("127.0.0.1", "localhost"))
    assert code == 2 and "no API key" in err


# --------------------------------------------------------------------------- export


def test_export_ndjson_to_a_file_and_to_stdout(capsys, server, history, tmp_path) -> None:
    out_file = tmp_path / "all.ndjson"
    code, out, err = sv(capsys, server, history.key, "export", "--out", str(out_file))
    assert code == 0 and out == "" and "exported 2 session(s), 4 version(s)" in err and "plaintext" in err
    assert stat.S_IMODE(out_file.stat().st_mode) == 0o600
    lines = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert lines[0] == {"format": portability.FORMAT}
    assert lines[-1] == {"end": True, "sessions": 2}
    assert {line["name"]: len(line["versions"]) for line in lines[1:-1]} == {"notes": 1, "codex/s1": 3}
    code, out, _ = sv(capsys, server, history.key, "export")
    assert out == out_file.read_text()
    assert list(tmp_path.glob(".*.part")) == []


def test_export_markdown_writes_one_page_per_session(capsys, server, history, tmp_path) -> None:
    folder = tmp_path / "md"
    code, _, err = sv(capsys, server, history.key, "export", "--dir", str(folder))
    assert code == 0, err
    files = sorted(p.name for p in folder.iterdir())
    page_name = export_files.markdown_file("codex/s1", set())
    assert files == sorted(["index.md", "notes.md", page_name]) and page_name.startswith("codex_s1-")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in folder.iterdir())
    page = (folder / page_name).read_text()
    assert page.startswith("# codex/s1\n") and f"- Repository: `{REPO}`" in page
    assert page.index("## Version 3 (latest)") < page.index("## Version 2") < page.index("## Version 1")
    for expected in ("first try", "second try", "third try", "- **use JWT** — because stateless servers"):
        assert expected in page
    index = (folder / "index.md").read_text()
    assert f"[codex/s1]({page_name})" in index and "[notes](notes.md)" in index
    code, _, err = sv(capsys, server, history.key, "export", "--dir", str(folder))
    assert code == 2 and "not an empty folder" in err
    code, _, err = sv(capsys, server, history.key, "export", "--format", "markdown")
    assert code == 2 and "--dir" in err


# --------------------------------------------------------------------------- import


def test_import_ndjson_is_idempotent_and_dry_run_saves_nothing(
    capsys, server, runtime, history, tmp_path
) -> None:
    exported = tmp_path / "export.ndjson"
    assert sv(capsys, server, history.key, "export", "--out", str(exported))[0] == 0
    other = make_user(runtime)
    code, out, err = sv(capsys, server, other.key, "import", "ndjson", str(exported), "--dry-run")
    assert code == 0, err
    assert out == f"{exported}: 2 session(s), 4 version(s) would add, 0 already there; nothing was saved\n"
    assert client_names(server, other.key) == []
    code, out, err = sv(capsys, server, other.key, "import", "ndjson", str(exported))
    assert (code, out) == (0, f"{exported}: 2 session(s), 4 version(s) added, 0 already there\n"), err
    code, out, _ = sv(capsys, server, other.key, "import", "ndjson", str(exported), "--json")
    assert json.loads(out) == {
        "sessions": 2,
        "versions_added": 0,
        "versions_already_there": 4,
        "problems": [],
        "lines_done": 4,  # the header, two sessions and the end line
        "stopped": "",
        "incomplete": "",
        "dry_run": False,
    }
    moved = runtime.vault.load(other.principal, records.parse(records.LoadArgs, {"name": "codex/s1"}))
    assert (moved["summary"], moved["versions"]) == ("third try", [3, 2, 1])


def client_names(server: Any, key: str) -> list[str]:
    listed = api_client.list_sessions(Api.at(server.url, key))
    return [s["name"] for s in listed["sessions"]]


def export_of(*sessions: tuple[str, list[str]]) -> list[str]:
    lines = [json.dumps({"format": portability.FORMAT})]
    for name, summaries in sessions:
        versions = [
            {"version": n, "saved_at": "", "record": {"summary": s}} for n, s in enumerate(summaries, 1)
        ]
        lines.append(json.dumps({"name": name, "repo": "", "versions": versions}))
    return lines


def test_a_bad_line_stops_the_import_there_and_says_which(
    capsys, server, runtime, tmp_path, monkeypatch
) -> None:
    # one session a batch: line numbers span batches
    monkeypatch.setattr(batch_import, "BATCH_VERSIONS", (1, 1, 1))
    user = make_user(runtime)
    lines = export_of(("a", ["a1"]), ("b", ["b1", "b2"]))
    lines.insert(
        2, json.dumps({"name": "bad", "versions": [{"record": {"summary": ""}}]})
    )  # refused by the server
    lines.append(lines[-1][: len(lines[-1]) // 2])  # a truncated last line
    lines.append(json.dumps({"name": "never", "repo": "", "versions": [{"record": {"summary": "x"}}]}))
    path = tmp_path / "broken.ndjson"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = sv(capsys, server, user.key, "import", "ndjson", str(path))
    assert code == 1
    assert out == f"{path}: 3 session(s), 3 version(s) added, 0 already there\n"  # a, bad (nothing), b
    assert "not imported: line 3: " in err and "line 5 is not JSON" in err and "nothing from line 5 on" in err
    assert sorted(client_names(server, user.key)) == ["a", "b"]

    not_export = tmp_path / "other.ndjson"
    not_export.write_text('{"name": "x"}\n')
    code, _, err = sv(capsys, server, user.key, "import", "ndjson", str(not_export))
    assert code == 2 and "not a SessionVault export: the first line must be" in err
    code, _, err = sv(capsys, server, user.key, "import", "ndjson", str(tmp_path / "missing.ndjson"))
    assert code == 2 and "cannot read" in err
    code, _, err = sv(capsys, server, user.key, "import", "ndjson")
    assert code == 2 and "ndjson needs PATH" in err
    code, _, err = sv(capsys, server, user.key, "import", "ndjson", str(path), "--session", "x")
    assert code == 2 and "--session and --latest are for a client id" in err


def test_an_export_cut_at_a_line_boundary_imports_what_it_holds_and_says_so(
    capsys, server, runtime, history, tmp_path
) -> None:
    """Its end line (`{"end": true, "sessions": N}`) is what tells a whole export from a copy cut
    short between two lines: such a copy is imported, with a warning and exit status 1."""
    exported = tmp_path / "export.ndjson"
    assert sv(capsys, server, history.key, "export", "--out", str(exported))[0] == 0
    header, first, _second, end = exported.read_bytes().splitlines(keepends=True)
    assert json.loads(end) == {"end": True, "sessions": 2}
    held = len(json.loads(first)["versions"])
    for name, body, why in (
        ("cut.ndjson", header + first, "has no end line"),
        ("miscounted.ndjson", header + first + end, "end line says 2 session(s), but it held 1"),
    ):
        cut, other = tmp_path / name, make_user(runtime)
        cut.write_bytes(body)
        code, out, err = sv(capsys, server, other.key, "import", "ndjson", str(cut))
        assert code == 1, err
        assert out == f"{cut}: 1 session(s), {held} version(s) added, 0 already there\n"
        assert f"sessionvault: {cut} is not a whole export: the " in err and why in err, err
        assert "Import the whole export again: nothing is added twice" in err
    code, out, err = sv(capsys, server, other.key, "import", "ndjson", str(exported))
    assert code == 0 and err == "", err  # the whole export: the rest comes in, no warning
    assert sorted(client_names(server, other.key)) == sorted(client_names(server, history.key))


def test_import_reads_stdin_as_a_real_process(server, runtime, tmp_path) -> None:
    user = make_user(runtime)
    body = "\n".join([*export_of(("piped", ["one", "two"])), json.dumps({"end": True, "sessions": 1})]) + "\n"
    env = {**os.environ, names.HOME_ENV: str(tmp_path / "state"), names.KEY_ENV: user.key}
    env.pop(names.URL_ENV, None)
    done = subprocess.run(
        [sys.executable, "-m", "sessionvault.cli.main", "import", "ndjson", "-", "--url", server.url],
        input=body,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "stdin: 1 session(s), 2 version(s) added, 0 already there\n"
    kept = api_client.session_versions(Api.at(server.url, user.key), "piped")
    assert [v["record"]["summary"] for v in kept["versions"]] == ["one", "two"]


def test_an_importer_imports_idempotently_with_secrets_scrubbed(
    capsys, server, runtime, tmp_path, monkeypatch
) -> None:
    secret = "AKIA" + "Z4QX7N2LWB3KD5HJ"  # made up: the shape of an AWS access key id
    seen: list[Path] = []

    def fake(path: Path) -> list[dict[str, Any]]:
        seen.append(path)
        return [
            {"name": "memory/one", "summary": "first note", "repo": REPO},
            {"name": "memory/one", "summary": f"second note with {secret}", "repo": REPO, "handoff": True},
            {"name": "memory/two", "summary": "another", "todos": ["a", "b"]},
        ]

    module = types.ModuleType("sessionvault.local.data.importers")
    module.IMPORTERS = {"fake-tool": fake}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sessionvault.local.data.importers", module)
    user = make_user(runtime)
    source = tmp_path / "data"
    source.mkdir()
    code, out, err = run(capsys, "import", "list")
    assert code == 0 and out.split() == ["ndjson", "fake-tool"]
    code, out, err = sv(capsys, server, user.key, "import", "fake-tool", str(source), "--dry-run")
    assert code == 0 and "3 version(s) would add" in out and client_names(server, user.key) == [], err
    code, out, err = sv(capsys, server, user.key, "import", "fake-tool", str(source))
    assert code == 0 and "2 session(s), 3 version(s) added" in out and seen[-1] == source, err
    code, out, err = sv(capsys, server, user.key, "import", "fake-tool", str(source))
    assert code == 0 and "0 version(s) added, 3 already there" in out, err
    kept = api_client.session_versions(Api.at(server.url, user.key), "memory/one")
    summaries = [v["record"]["summary"] for v in kept["versions"]]
    assert summaries[0] == "first note" and secret not in summaries[1] and len(summaries) == 2
    assert all("handoff" not in v for v in kept["versions"])  # an import never offers a handoff
    code, _, err = sv(capsys, server, user.key, "import", "nope", str(source))
    assert code == 2 and "no source 'nope'" in err and "fake-tool" in err


def test_without_importers_a_source_that_is_not_one_says_what_is(capsys, monkeypatch) -> None:
    monkeypatch.setitem(
        sys.modules, "sessionvault.local.data.importers", None
    )  # import fails: ModuleNotFoundError
    code, _, err = run(capsys, "import", "basic-memory", "x")
    assert code == 2 and "no source 'basic-memory'" in err and "claude-code" in err and "ndjson" in err


def test_export_and_import_take_a_workspace(capsys, server, runtime, history, tmp_path) -> None:
    """Issue 37 item 8: the API took `workspace` for export and import, the CLI did not."""
    team = f"crew-{os.urandom(3).hex()}"
    accounts.create_workspace(admin_db(), runtime.keys.provider, team, history.id)
    exported = tmp_path / "mine.ndjson"
    assert sv(capsys, server, history.key, "export", "--out", str(exported))[0] == 0
    code, out, err = sv(capsys, server, history.key, "import", "ndjson", str(exported), "--workspace", team)
    assert (code, out) == (0, f"{exported}: 2 session(s), 4 version(s) added, 0 already there\n"), err
    theirs = tmp_path / "team.ndjson"
    code, _, err = sv(capsys, server, history.key, "export", "--workspace", team, "--out", str(theirs))
    assert code == 0 and "exported 2 session(s), 4 version(s)" in err

    def summaries(path: Path) -> dict[str, list[str]]:
        lines = [json.loads(line) for line in path.read_text().splitlines()[1:-1]]
        return {line["name"]: [v["record"]["summary"] for v in line["versions"]] for line in lines}

    assert summaries(theirs) == summaries(exported)  # the same sessions, now in the workspace
    code, _, err = sv(capsys, server, history.key, "export", "--workspace", team + "-not-mine")
    assert code != 0 and "no workspace named" in err
