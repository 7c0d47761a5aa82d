"""The OpenCode reader on a real store: tests/fixtures/transcripts/opencode-1.18.33/opencode.db,
left by a real `opencode run` of OpenCode 1.18.33 against a scripted model (see its README)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from sessionvault.local.hook.capture import opencode

FIXTURE = Path(__file__).resolve().parents[4] / "fixtures" / "transcripts" / "opencode-1.18.33"
DB = FIXTURE / "opencode.db"


def _recorded_session() -> tuple[str, str]:
    """The id and folder of the one session the recorded run made, read from the fixture itself:
    re-recording it (make_fixture.py) gives a new id, and no test may hold the old one."""
    with sqlite3.connect(f"{DB.resolve().as_uri()}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT id, directory FROM session WHERE parent_id IS NULL").fetchall()
    conn.close()
    assert len(rows) == 1, f"the fixture should hold exactly one top-level session: {rows}"
    return rows[0][0], rows[0][1]


SESSION_ID, PROJECT = _recorded_session()
MARKER = "sv-marker-opencode-1f8e2d"
FAILING_COMMAND = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\""
LATEST_MIGRATION = "20260622202450_simplify_session_input"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A copy of the fixture, for the tests that change it or must see it unchanged."""
    copy = tmp_path / "opencode.db"
    shutil.copy2(DB, copy)
    return copy


def store_under(home: Path, source: Path = DB) -> Path:
    """`source` placed where OpenCode keeps its store under `home`."""
    target = home / ".local" / "share" / "opencode" / "opencode.db"
    target.parent.mkdir(parents=True)
    shutil.copy2(source, target)
    return target


def add_session(db: Path, session_id: str, directory: str, updated: int, parent: str | None = None) -> None:
    with sqlite3.connect(db) as conn:
        project = conn.execute("SELECT project_id FROM session WHERE id = ?", (SESSION_ID,)).fetchone()[0]
        conn.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, "
            "time_created, time_updated) VALUES (?, ?, ?, 'slug', ?, 'title', '1.18.33', ?, ?)",
            (session_id, project, parent, directory, updated, updated),
        )
    conn.close()


def set_bash_part(db: Path, command: str, output: str) -> None:
    with sqlite3.connect(db) as conn:
        part_id, raw = conn.execute(
            "SELECT id, data FROM part WHERE json_extract(data, '$.tool') = 'bash'"
        ).fetchone()
        data = json.loads(raw)
        data["state"]["input"]["command"] = command
        data["state"]["output"] = output
        conn.execute("UPDATE part SET data = ? WHERE id = ?", (json.dumps(data), part_id))
    conn.close()


# --- the fixture is the format this reader was written for ---------------------------------------


def test_the_fixture_is_opencode_1_18_33_with_every_table_and_column_the_reader_needs() -> None:
    conn = sqlite3.connect(f"{DB.as_uri()}?mode=ro", uri=True)
    try:
        versions = {row[0] for row in conn.execute("SELECT version FROM session")}
        migration = conn.execute("SELECT max(id) FROM migration").fetchone()[0]
        missing = [
            f"{table}.{column}"
            for table, columns in opencode.SCHEMA.items()
            for column in columns
            if column not in {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
        ]
    finally:
        conn.close()
    assert versions == {opencode.KNOWN_VERSION}, (
        f"the fixture was made by OpenCode {versions}, the reader is written against "
        f"{opencode.KNOWN_VERSION}: re-check the store's format and update KNOWN_VERSION and SCHEMA"
    )
    assert migration == LATEST_MIGRATION, (
        f"the fixture's store schema is at migration {migration}, not {LATEST_MIGRATION}: OpenCode "
        "changed its database; re-check what the reader reads (message/part/todo) before updating"
    )
    assert not missing, f"OpenCode's store lacks what the reader reads: {missing}"


# --- what the session says -----------------------------------------------------------------------


def test_the_transcript_is_opencodes_and_names_the_session_and_the_folder_it_ran_in() -> None:
    transcript = opencode.read(DB, SESSION_ID)
    assert (transcript.client, transcript.session_id, transcript.cwd) == ("opencode", SESSION_ID, PROJECT)


def test_the_ask_is_the_prompt_as_opencode_run_stored_it_quoted() -> None:
    asks = list(opencode.read(DB, SESSION_ID).asks)
    assert asks == ['"Plan the widget config work: track it, write notes/plan.md, check the config loads."']


def test_the_todo_list_is_todowrites_tasks_in_order_with_their_statuses() -> None:
    assert opencode.read(DB, SESSION_ID).todos == {
        "Draft the widget plan in notes/plan.md": "in_progress",
        "Check the widget config loads": "pending",
    }


def test_the_written_file_is_named_relative_to_the_project() -> None:
    assert list(opencode.read(DB, SESSION_ID).files) == ["notes/plan.md"]


def test_the_failing_command_is_kept_with_its_error_line() -> None:
    failures = list(opencode.read(DB, SESSION_ID).failures)
    assert failures == [f"{FAILING_COMMAND}: sv-boom: widget config missing"]


def test_the_last_message_is_the_final_answer_with_its_marker() -> None:
    last = opencode.read(DB, SESSION_ID).last_message
    assert last == f"The plan is in notes/plan.md; the config check failed. {MARKER}"


def test_a_session_without_compaction_has_no_compact_summary() -> None:
    assert opencode.read(DB, SESSION_ID).compact_summary == ""


def test_a_compaction_summary_is_the_compact_summary_and_not_the_last_message(db: Path) -> None:
    """The fixture has no compaction; this adds one in the shape OpenCode 1.18.33's compaction
    writes (its source: an assistant message with mode and agent "compaction", `summary: true`,
    whose text part is the summary)."""
    summary = {"role": "assistant", "mode": "compaction", "agent": "compaction", "summary": True}
    with sqlite3.connect(db) as conn:
        created = conn.execute("SELECT max(time_created) FROM message").fetchone()[0] + 1
        conn.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
            ("msg_zz_compaction", SESSION_ID, created, created, json.dumps(summary)),
        )
        conn.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            ("prt_zz_summary", "msg_zz_compaction", SESSION_ID, created, created,
             json.dumps({"type": "text", "text": "Summary: plan written, config check failing."})),
        )  # fmt: skip
    conn.close()
    transcript = opencode.read(db, SESSION_ID)
    assert transcript.compact_summary == "Summary: plan written, config check failing."
    assert MARKER in transcript.last_message


# --- failures stay short and to the point --------------------------------------------------------


def test_a_traceback_gives_its_error_line_not_its_header(db: Path) -> None:
    set_bash_part(
        db,
        "python3 app.py",
        'Traceback (most recent call last):\n  File "app.py", line 1, in <module>\nValueError: bad widget\n',
    )
    assert list(opencode.read(db, SESSION_ID).failures) == ["python3 app.py: ValueError: bad widget"]


def test_a_long_command_with_a_huge_output_makes_a_failure_of_at_most_300_characters(db: Path) -> None:
    set_bash_part(db, "make " + "target " * 200 + "\nsecond line", "x" * 5_000_000 + "\nfatal: late\n")
    (failure,) = opencode.read(db, SESSION_ID).failures
    assert len(failure) <= 300 and failure.startswith("make target") and "second line" not in failure


# --- finding the session -------------------------------------------------------------------------


def test_locate_finds_the_projects_newest_session_in_opencodes_data_folder(tmp_path: Path) -> None:
    db = store_under(tmp_path)
    assert opencode.locate(tmp_path, Path(PROJECT), env={}) == opencode.Stored(db, SESSION_ID)


def test_locate_honours_xdg_data_home(tmp_path: Path) -> None:
    data = tmp_path / "data" / "opencode"
    data.mkdir(parents=True)
    shutil.copy2(DB, data / "opencode.db")
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    assert opencode.locate(tmp_path / "home", Path(PROJECT), env=env) == opencode.Stored(
        data / "opencode.db", SESSION_ID
    )
    assert opencode.locate(tmp_path / "home", Path(PROJECT), env={}) is None


def test_locate_honours_opencode_db_absolute_or_inside_the_data_folder(tmp_path: Path) -> None:
    absolute = tmp_path / "elsewhere.db"
    shutil.copy2(DB, absolute)
    assert opencode.db_path(tmp_path, {"OPENCODE_DB": str(absolute)}) == absolute
    assert opencode.db_path(tmp_path, {"OPENCODE_DB": "dev.db"}) == tmp_path / ".local/share/opencode/dev.db"
    assert opencode.db_path(tmp_path, {"OPENCODE_DB": ":memory:"}) is None
    found = opencode.locate(tmp_path, Path(PROJECT), env={"OPENCODE_DB": str(absolute)})
    assert found == opencode.Stored(absolute, SESSION_ID)


def test_locate_by_id_finds_that_session_and_nothing_for_an_unknown_id(tmp_path: Path) -> None:
    db = store_under(tmp_path)
    assert opencode.locate(tmp_path, Path("/elsewhere"), SESSION_ID, env={}) == opencode.Stored(
        db, SESSION_ID
    )
    assert opencode.locate(tmp_path, Path(PROJECT), "ses_unknown", env={}) is None


def test_locate_skips_other_folders_and_subagent_sessions_but_takes_a_newer_one_here(
    db: Path, tmp_path: Path
) -> None:
    later = 1_900_000_000_000
    add_session(db, "ses_other_folder", "/home/user/other", later)
    add_session(db, "ses_subagent", PROJECT, later + 1, parent=SESSION_ID)
    home = tmp_path / "home"
    stored = store_under(home, db)
    assert opencode.locate(home, Path(PROJECT), env={}) == opencode.Stored(stored, SESSION_ID)
    add_session(stored, "ses_newer_here", PROJECT + "/sub", later + 2)
    assert opencode.locate(home, Path(PROJECT), env={}) == opencode.Stored(stored, "ses_newer_here")


def test_locate_without_a_store_or_a_session_of_the_folder_is_none(tmp_path: Path) -> None:
    assert opencode.locate(tmp_path, Path(PROJECT), env={}) is None
    store_under(tmp_path)
    assert opencode.locate(tmp_path, Path("/home/user/other"), env={}) is None


# --- never in the way ----------------------------------------------------------------------------


def test_reading_leaves_the_store_byte_for_byte_as_it_was(db: Path) -> None:
    before = db.read_bytes()
    opencode.read(db, SESSION_ID)
    opencode.locate(db.parent, Path(PROJECT), env={"OPENCODE_DB": str(db)})
    assert db.read_bytes() == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["opencode.db"]


def test_an_unknown_session_reads_as_an_empty_transcript() -> None:
    transcript = opencode.read(DB, "ses_unknown")
    assert (transcript.session_id, transcript.cwd, list(transcript.asks), transcript.last_message) == (
        "ses_unknown",
        "",
        [],
        "",
    )


def test_a_database_that_is_not_opencodes_reads_as_empty_without_raising(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE unrelated (x)")
    conn.close()
    assert opencode.read(other, SESSION_ID).todos == {}
    torn = tmp_path / "torn.db"
    torn.write_bytes(DB.read_bytes()[:8192])
    assert opencode.read(torn, SESSION_ID).client == "opencode"


def test_a_missing_database_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nowhere\.db"):
        opencode.read(tmp_path / "nowhere.db", SESSION_ID)
