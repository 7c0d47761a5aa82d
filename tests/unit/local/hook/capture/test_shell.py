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


def test_a_failures_command_loses_its_secret_arguments_and_keeps_the_rest() -> None:
    password = "Zq8Rt5" + "Lm2Np9Xw4K"
    entry = failure(
        f"PGPASSWORD={password} psql -h db -U app", [f"psql: error: FATAL: password for {password}"]
    )
    assert password not in entry
    assert entry.startswith("PGPASSWORD=[REDACTED:secret_assignment] psql -h db -U app: psql: error: FATAL")
    assert failure(f"mysql -u root -p{password} app", ["ERROR 1045"]) == (
        "mysql -u root -p[REDACTED:secret_flag] app: ERROR 1045"
    )


def test_a_key_at_the_commands_clip_is_scrubbed_before_the_cut() -> None:
    token = "gh" + "p_Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzAbCd"
    entry = failure("git push " + "x" * 90 + f" {token}", ["fatal: denied"])
    assert "Zx9Qw8" not in entry and "[REDACTED:" in entry


def test_a_command_naming_a_private_file_keeps_no_output_line() -> None:
    entry = failure(
        "set -a && source .env && ./migrate", ["./migrate: line 3: DB_PASSWORD=hunter: not found"]
    )
    assert entry == "set -a && source .env && ./migrate: output withheld: it names a private file"
