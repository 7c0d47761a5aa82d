"""A failed shell command as one entry, "command: error line", the same for every client.

How a client reports a command's end (an error flag, an exit code field, a header line) and
what it wraps around the output (tags, field lines) is the client's, so each reader finds the
failure and hands over the output's lines; what the entry then says is decided here once.

Of a failure a capture keeps the command with its secrets removed (`PGPASSWORD=...`, `-p...`,
`--token ...`, a URL's password: core/redact.py) and one error line, scrubbed too, each
scrubbed before it is clipped; never the rest of the output. A command that names a private
file (private.py: `cat .env`, `source .env && psql`) keeps no output line at all: its error
could be a line of the file."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from sessionvault.core.redact import scrub_text

from . import private as private_files
from .transcript import clip, cut

MAX_FAILURE = 300  # characters of one "command: error line" entry, at most
MAX_COMMAND = 120  # characters of its command, so a long command leaves room for the error
# Words of an error line (shells, compilers, Python, git, Go, Rust). A traceback's header has
# none, so a traceback gives its last line, the exception.
ERROR_WORD = re.compile(
    r"error|exception|fail|fatal|denied|not found|no such|cannot|can't|invalid|missing|abort|panic",
    re.IGNORECASE,
)


WITHHELD = "output withheld: it names a private file"
_DEFAULT = private_files.matcher(private_files.DEFAULT_PRIVATE)


def failure(
    command: str, output: Iterable[str], otherwise: str = "failed", private: Callable[[str], bool] = _DEFAULT
) -> str:
    """The entry for `command`, which failed printing the lines `output`: the command on one
    line (a multi-line script's white space folded), then `error_line(output)`, or `otherwise`
    when the output has no line; WITHHELD when the command names a `private` file."""
    folded = " ".join(private_files.without_spans(command).split())
    said = WITHHELD if private_files.names_private(folded, private) else error_line(output) or otherwise
    # Scrubbed together (a password the command gave is found again in its error line), each
    # held back at a word first and clipped only after.
    both = scrub_text(f"{cut(folded, 4 * MAX_COMMAND)}\n{cut(said, 4 * MAX_FAILURE)}")[0]
    clean_command, _, clean_said = both.partition("\n")
    return clip(f"{clip(clean_command, MAX_COMMAND)}: {clean_said}", MAX_FAILURE)


def error_line(output: Iterable[str]) -> str:
    """The line that says what went wrong: the first that reads like an error, else the last
    non-empty one (a command's last words are its verdict more often than its first); ""
    when every line is empty."""
    lines = [line.strip() for line in output if line.strip()]
    return next((line for line in lines if ERROR_WORD.search(line)), lines[-1] if lines else "")
