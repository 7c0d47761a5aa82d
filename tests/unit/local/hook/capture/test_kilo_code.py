"""Reading Kilo Code's own store (kilo.db: OpenCode's schema under Kilo's name), on one a real
Kilo Code 7.7.9 wrote (tests/fixtures/transcripts/kilo-code-7.7.9, made by its record.py: the
scripted run every client's fixture has, two turns); the OpenCode reader's own tests cover
the store's odd and broken cases."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from sessionvault.local.hook.capture import kilo_code, opencode

from .gemini_family import MAKEFILE, TRANSCRIPTS
from .recorded_run import CWD, FAILURE, PROMPTS, TODOS

VERSION = "7.7.9"
FIXTURES = TRANSCRIPTS / f"kilo-code-{VERSION}"
HOME = FIXTURES / "home"
DB = HOME / ".local" / "share" / "kilo" / "kilo.db"
MARKER = "sv-marker-kilo-code-run-2"


def the_session() -> str:
    """The id the fixture's own plugin log reported for the session that went idle."""
    [first, *rest] = [
        json.loads(line) for line in (FIXTURES / "plugin-events.jsonl").read_text().splitlines()
    ]
    assert all(e["properties"]["sessionID"] == first["properties"]["sessionID"] for e in rest)
    return str(first["properties"]["sessionID"])


def test_the_makefile_pins_the_kilo_code_the_fixture_was_recorded_with() -> None:
    assert f"@kilocode/cli-linux-x64@{VERSION}" in MAKEFILE.read_text()


def test_the_store_is_kilo_code_7_7_9_with_the_tables_the_opencode_reader_needs() -> None:
    with closing(sqlite3.connect(f"{DB.as_uri()}?mode=ro", uri=True)) as db:
        assert db.execute("SELECT version FROM session").fetchall() == [(VERSION,)]
        for table, columns in opencode.SCHEMA.items():
            have = {row[1] for row in db.execute(f'PRAGMA table_info("{table}")')}
            assert set(columns) <= have, (table, set(columns) - have)


def test_the_reader_finds_what_the_two_turns_did() -> None:
    found = kilo_code.locate(HOME, CWD, env={})
    assert found == opencode.Stored(DB.absolute(), the_session())
    read = kilo_code.read(found)
    assert read.client == "kilo-code" and read.cwd == str(CWD) and read.session_id == the_session()
    assert list(read.asks) == PROMPTS  # without the quotes `kilo run` keeps
    assert read.todos == TODOS and list(read.files) == ["notes/plan.md"] and list(read.failures) == [FAILURE]
    assert MARKER in read.last_message


def test_locate_follows_xdg_data_home_and_an_id(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(HOME / ".local" / "share", data)
    found = kilo_code.locate(
        tmp_path / "nohome", Path("/elsewhere"), the_session(), env={"XDG_DATA_HOME": str(data)}
    )
    assert found is not None and found.db == data / "kilo" / "kilo.db"
    assert kilo_code.locate(HOME, CWD, "ses_unknown", env={}) is None
    assert kilo_code.locate(tmp_path, CWD, env={}) is None
    assert kilo_code._unquoted('"x"') == "x" and kilo_code._unquoted('"') == '"'
