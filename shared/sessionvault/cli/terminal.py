"""What the session commands print on a terminal: a confirmation typed by hand, JSON for
scripts, dates and tables cut to the terminal's width."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from sessionvault.errors import ConfigError
from sessionvault.local.data import readable as diff


def confirm(what: str, expected: str, yes: bool) -> bool:
    """Irreversible, so confirmed: with --yes, or on a terminal by typing `expected`; refused
    (ConfigError) without a terminal. False when what was typed is not `expected`."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise ConfigError(f"not deleting {what} without confirmation: stdin is not a terminal; add --yes")
    print(
        f"This deletes {what}; it cannot be undone.\nTo confirm, type {expected!r}: ",
        end="",
        file=sys.stderr,
        flush=True,
    )
    if sys.stdin.readline().strip() != expected:
        print(f"not deleted: that is not {expected!r}", file=sys.stderr)
        return False
    return True


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def when(iso: str) -> str:
    """`2025-01-02T10:11:12+00:00` -> `2025-01-02 10:11` (a table's width)."""
    return iso[:16].replace("T", " ")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], widths: Sequence[int] = ()) -> str:
    """Left-aligned columns; a column of `widths` > 0 is cut to that width, the last column to
    what the terminal leaves."""
    cells = [
        [diff.one_line(v, w) for v, w in zip(row, [*widths, *[0] * len(headers)], strict=False)]
        for row in rows
    ]
    sizes = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    room = shutil.get_terminal_size((120, 24)).columns - sum(s + 2 for s in sizes[:-1])
    sizes[-1] = max(min(sizes[-1], room), 10)
    lines = []
    for row in [list(headers), *cells]:
        row[-1] = diff.one_line(row[-1], sizes[-1])
        lines.append("  ".join(c.ljust(s) for c, s in zip(row, sizes, strict=True)).rstrip())
    return "\n".join(lines)
