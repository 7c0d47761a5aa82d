"""A failed command's entry, "command: error line" (shell.py), the same for every reader."""

from __future__ import annotations

import pytest

from sessionvault.local.hook.capture.shell import MAX_COMMAND, MAX_FAILURE, error_line, failure


@pytest.mark.parametrize(
    ("output", "line"),
    [
        (
            'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: bad widget',
            "ValueError: bad widget",
        ),
        ("compiling\nfatal: not a git repository\nerror: later", "fatal: not a git repository"),
        ("a.txt\nb.txt\n\n", "b.txt"),  # no line reads like an error: the last one
        ("  \n\n", ""),
    ],
)
def test_the_error_line_is_the_first_that_reads_like_an_error_else_the_last(output: str, line: str) -> None:
    assert error_line(output.splitlines()) == line


def test_a_failure_is_the_command_on_one_line_then_its_error_line() -> None:
    assert failure("make \\\n  test", ["ok", "  error: no rule  "]) == "make \\ test: error: no rule"


def test_a_failure_without_output_says_what_the_reader_knows_instead() -> None:
    assert failure("make", []) == "make: failed"
    assert failure("make", [""], "exit code 2") == "make: exit code 2"


def test_a_long_command_is_shortened_so_the_error_line_still_shows() -> None:
    entry = failure("python3 -c " + "x" * 400, ["Error: " + "y" * 400])
    command, _, rest = entry.partition(": ")
    assert len(command) == MAX_COMMAND and command.endswith("…") and rest.startswith("Error: yyy")
    assert len(entry) == MAX_FAILURE and entry.endswith("…")
