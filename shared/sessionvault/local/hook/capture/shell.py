"""A failed shell command as one entry, "command: error line", the same for every client.

How a client reports a command's end (an error flag, an exit code field, a header line) and
what it wraps around the output (tags, field lines) is the client's, so each reader finds the
failure and hands over the output's lines; what the entry then says is decided here once."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .transcript import clip

MAX_FAILURE = 300  # characters of one "command: error line" entry, at most
MAX_COMMAND = 120  # characters of its command, so a long command leaves room for the error
# Words of an error line (shells, compilers, Python, git, Go, Rust). A traceback's header has
# none, so a traceback gives its last line, the exception.
ERROR_WORD = re.compile(
    r"error|exception|fail|fatal|denied|not found|no such|cannot|can't|invalid|missing|abort|panic",
    re.IGNORECASE,
)


def failure(command: str, output: Iterable[str], otherwise: str = "failed") -> str:
    """The entry for `command`, which failed printing the lines `output`: the command on one
    line (a multi-line script's white space folded), then `error_line(output)`, or `otherwise`
    when the output has no line."""
    command = clip(" ".join(command.split()), MAX_COMMAND)
    return clip(f"{command}: {error_line(output) or otherwise}", MAX_FAILURE)


def error_line(output: Iterable[str]) -> str:
    """The line that says what went wrong: the first that reads like an error, else the last
    non-empty one (a command's last words are its verdict more often than its first); ""
    when every line is empty."""
    lines = [line.strip() for line in output if line.strip()]
    return next((line for line in lines if ERROR_WORD.search(line)), lines[-1] if lines else "")
