"""Two versions of a session, section by section: each section as lines of text (a plan step, a
decision with its reason, a todo...), compared line by line. Pure functions of the records."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Op = Literal[" ", "-", "+"]

# The readable sections of a record, in the order the web view and the MCP App show them.
SECTIONS = (
    ("summary", "Summary"),
    ("plan", "Plan"),
    ("decisions", "Decisions"),
    ("todos", "Todos"),
    ("files", "Files"),
    ("errors", "Errors"),
    ("tried", "Tried"),
)
DETAILS = ("repo", "client", "branch", "commit")


@dataclass(frozen=True)
class SectionDiff:
    title: str
    lines: tuple[tuple[Op, str], ...]

    @property
    def changed(self) -> bool:
        return any(op != " " for op, _ in self.lines)


def decision_text(decision: Any) -> str:
    """One decision and its reason, as one line."""
    if isinstance(decision, Mapping):
        return f"{decision.get('decision', '')} (because {decision.get('reason', '')})"
    return str(decision)


def section_lines(record: Mapping[str, Any], field: str) -> list[str]:
    value = record.get(field)
    if field == "summary":
        return str(value or "").splitlines()
    if not isinstance(value, list):
        return []
    if field == "plan":
        return [f"{n}. {step}" for n, step in enumerate(value, start=1)]
    if field == "decisions":
        return [decision_text(d) for d in value]
    return [str(item) for item in value]


def detail_lines(record: Mapping[str, Any]) -> list[str]:
    return [f"{name}: {record[name]}" for name in DETAILS if record.get(name)]


def _compare(old: list[str], new: list[str]) -> tuple[tuple[Op, str], ...]:
    out: list[tuple[Op, str]] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += [(" ", line) for line in old[i1:i2]]
            continue
        out += [("-", line) for line in old[i1:i2]]
        out += [("+", line) for line in new[j1:j2]]
    return tuple(out)


def compare(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[SectionDiff]:
    """Every section of `old` against `new` (records as the export holds them), details first."""
    diffs = [SectionDiff("Details", _compare(detail_lines(old), detail_lines(new)))]
    for field, title in SECTIONS:
        diffs.append(SectionDiff(title, _compare(section_lines(old, field), section_lines(new, field))))
    return diffs
