"""What the readers of Gemini CLI's and Qwen Code's session files share, tested once: Qwen Code is a
fork of Gemini CLI, and each fixture (tests/fixtures/transcripts/<client>-<version>, made by its
record.py) is the same scripted run. test_gemini.py and test_qwen.py each subclass
`SessionFileSpec` with their `Recording` and add what only their client does."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from .recorded_run import CWD, FAILURE, PROMPTS, TODOS

TRANSCRIPTS = Path(__file__).resolve().parents[4] / "fixtures" / "transcripts"
MAKEFILE = Path(__file__).resolve().parents[5] / "Makefile"


def write_records(path: Path, *records: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@dataclass(frozen=True)
class Recording:
    """One client's recorded run: its reader, where the fixture is and what it holds."""

    client: str  # the reader's Transcript.client, the fixture folder's prefix
    reader: ModuleType  # sessionvault.local.hook.capture.<client>
    name: str  # as the Makefile and the error messages name it, e.g. "Gemini CLI"
    package: str  # the npm package the Makefile pins
    version: str
    session: Path  # the session file the run wrote
    session_id: str
    hook_events: tuple[str, ...]  # the hooks the run fired; the last reports the session id and cwd
    unknown_id: str  # a session id no session has
    junk: bytes  # lines that are not records of this client

    @property
    def fixtures(self) -> Path:
        return TRANSCRIPTS / f"{self.client}-{self.version}"

    @property
    def home(self) -> Path:
        return self.fixtures / "home"

    @property
    def marker(self) -> str:
        """In the final answer of the last turn."""
        return f"sv-marker-{self.client}-run-2"

    def hooks(self, event: str) -> list[dict[str, Any]]:
        lines = (self.fixtures / "hooks" / f"{event}.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]


class SessionFileSpec:
    """The tests both readers pass alike."""

    recording: ClassVar[Recording]

    # The real session file.

    def test_the_makefile_pins_the_client_version_the_fixture_was_recorded_with(self) -> None:
        rec = self.recording
        pinned = re.search(rf"{re.escape(rec.package)}@(\S+)", MAKEFILE.read_text())
        assert pinned and pinned.group(1) == rec.version, (
            f"the Makefile pins {rec.name} {pinned and pinned.group(1)}, this fixture is {rec.version}: "
            f"re-record it with {rec.fixtures.relative_to(MAKEFILE.parent)}/record.py and recheck the reader"
        )

    def test_the_session_id_and_project_folder_are_the_ones_the_hooks_reported(self) -> None:
        rec = self.recording
        read = rec.reader.read(rec.session)
        last = rec.hooks(rec.hook_events[-1])[0]
        assert read.client == rec.client
        assert read.session_id == rec.session_id == last["session_id"]
        assert read.cwd == str(CWD) == last["cwd"]

    def test_the_asks_are_the_prompts_the_user_typed(self) -> None:
        assert list(self.recording.reader.read(self.recording.session).asks) == PROMPTS

    def test_the_todos_are_the_last_todo_list_written_with_its_statuses(self) -> None:
        assert self.recording.reader.read(self.recording.session).todos == TODOS

    def test_a_written_then_edited_file_is_listed_once_relative_to_the_project(self) -> None:
        assert list(self.recording.reader.read(self.recording.session).files) == ["notes/plan.md"]

    def test_a_shell_command_that_exited_non_zero_is_a_failure_with_its_error_line(self) -> None:
        # `ls notes` succeeded: not one
        assert list(self.recording.reader.read(self.recording.session).failures) == [FAILURE]

    def test_the_last_message_is_the_final_answer_of_the_last_turn(self) -> None:
        rec = self.recording
        assert rec.marker in rec.reader.read(rec.session).last_message

    def test_every_hook_payload_names_the_session_file_by_its_home_path(self) -> None:
        rec = self.recording
        for event in rec.hook_events:
            for payload in rec.hooks(event):
                assert payload["hook_event_name"] == event and payload["session_id"] == rec.session_id
                assert payload["transcript_path"] == "/home/user/" + str(rec.session.relative_to(rec.home))

    # Cut, torn and odd input.

    def test_a_torn_last_line_is_skipped_and_everything_before_it_kept(self, tmp_path: Path) -> None:
        rec = self.recording
        raw = rec.session.read_bytes()
        path = tmp_path / rec.session.name
        path.write_bytes(raw[: raw.rindex(rec.marker.encode())])  # killed while writing the last answer
        read = rec.reader.read(path)
        assert list(read.asks) == PROMPTS and read.todos == TODOS and list(read.failures) == [FAILURE]
        assert rec.marker not in read.last_message

    def test_a_file_cut_at_any_point_reads_without_raising(self, tmp_path: Path) -> None:
        rec = self.recording
        raw = rec.session.read_bytes()
        path = tmp_path / rec.session.name
        for end in range(0, len(raw), max(1, len(raw) // 97)):
            path.write_bytes(raw[:end])
            rec.reader.read(path)

    def test_lines_that_are_not_records_are_skipped(self, tmp_path: Path) -> None:
        rec = self.recording
        path = tmp_path / rec.session.name
        path.write_bytes(rec.junk + rec.session.read_bytes())
        assert list(rec.reader.read(path).asks) == PROMPTS

    # Finding the file.

    def test_locate_finds_a_session_by_its_id_in_any_project(self) -> None:
        rec = self.recording
        assert rec.reader.locate(rec.home, CWD, rec.session_id) == rec.session
        assert rec.reader.locate(rec.home, Path("/somewhere/else"), rec.session_id) == rec.session

    def test_locate_returns_none_for_another_project_or_an_unknown_id(self) -> None:
        rec = self.recording
        assert rec.reader.locate(rec.home, Path("/home/user/other")) is None
        assert rec.reader.locate(rec.home, CWD, rec.unknown_id) is None
        assert rec.reader.locate(rec.home / "missing", CWD) is None
