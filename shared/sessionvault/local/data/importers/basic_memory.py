"""basic-memory's notes (the Markdown files of a project folder, ~/basic-memory by default) as
sessions. PATH is the project folder or one note; the project's index (memory.db) is not read:
the files are basic-memory's source of truth.

The mapping, one session per note (docs/backup.md says the same to users):
- name: `basic-memory/<permalink>` (the note's frontmatter), else `basic-memory/<path of the file
  in the folder, without .md>`;
- summary: `# <title>` and the note's text, with the observations and relations the fields
  below take out of it, then `Tags: ...` and `Type: ...` from the frontmatter; cut at 4,000
  characters with a marker naming the file;
- decisions: observations `- [decision] text (context)`: the text, and the context as the
  reason (else "not recorded in the note");
- todos: observations [todo], [task], [next], [action] and open task boxes `- [ ] text`;
- errors: [problem], [issue], [bug], [error], [failure];
- tried: [tried], [attempt], [experiment], [result], [lesson];
- plan: [plan], [step], [goal];
- other observations ([fact], [idea], [requirement], ...) and the relations
  (`- implements [[Other Note]]`) stay in the summary's text where the note has them;
- client: `basic-memory`; repo: none.
Dropped: frontmatter keys other than title, type, tags and permalink; files that are not
Markdown; dot-folders (.git, .obsidian, .basic-memory) and their notes; the index (memory.db).

Read: only regular files inside the folder, walked without following links; a note or folder
that is a symbolic link refuses the import (a link named notes/env.md could point at
/proc/self/environ). Bounded by _common.Budget: 1 MB a note, 50 MB and 10,000 notes an import.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sessionvault.errors import ValidationFailed

from . import _common as c

SOURCE = "basic-memory"
NO_REASON = "not recorded in the note"

_FIELDS = {
    "decisions": {"decision", "decided"},
    "todos": {"todo", "task", "next", "action", "action_item", "action-item"},
    "errors": {"problem", "issue", "bug", "error", "failure"},
    "tried": {"tried", "attempt", "experiment", "result", "lesson"},
    "plan": {"plan", "step", "goal"},
}
_BY_CATEGORY = {category: field for field, categories in _FIELDS.items() for category in categories}
_ITEM = re.compile(r"^\s*[-*+]\s+(?P<rest>.*\S)\s*$")
_OBSERVATION = re.compile(r"^\[(?P<category>[^\[\]]+)\]\s+(?P<text>.+)$")
_CONTEXT = re.compile(r"^(?P<text>.*\S)\s+\((?P<context>[^()]*)\)$")
_TASK = re.compile(r"^\[ \]\s+(?P<text>.+)$")
_HEADING = re.compile(r"^(?P<level>#{1,6})\s")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SKIP_DIRS = frozenset({"node_modules", "__pycache__"})


def read(path: Path) -> list[dict[str, Any]]:
    """save_session arguments for every note under `path`, by file path."""
    path = path.expanduser()
    budget = c.Budget()
    if not path.is_dir():
        if not (path.exists() or path.is_symlink()):
            raise ValidationFailed(f"no basic-memory project at {path} (give the project folder or a note)")
        folder = path.parent.resolve()
        return [_note(c.read_inside(folder / path.name, folder, budget), folder / path.name, folder)]
    folder = path.resolve()  # the folder named is trusted; nothing below it may lead out of it
    return [_note(c.read_inside(file, folder, budget), file, folder) for file in _notes(folder, budget)]


def _notes(folder: Path, budget: c.Budget) -> list[Path]:
    """The notes under `folder`, walked without following any link: a note or a folder that is
    a symbolic link is refused (it could lead anywhere: /proc/self/environ, ~/.aws), as is a
    walk over the import's item cap."""
    found: list[Path] = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or entry.name in _SKIP_DIRS:
            continue
        note = entry.suffix.lower() == ".md"
        if entry.is_symlink():
            if note or entry.is_dir():
                raise ValidationFailed(
                    f"{entry} is a symbolic link: only regular files inside the folder are imported "
                    "(copy the note in instead)"
                )
            continue
        if entry.is_dir():
            found += _notes(entry, budget)
        elif note and entry.is_file():
            found.append(entry)
        if len(found) > budget.max_items:
            raise ValidationFailed(
                f"more than {budget.max_items:,} notes under {folder}; nothing was imported: "
                "import one folder at a time"
            )
    return found


def _note(text: str, file: Path, folder: Path) -> dict[str, Any]:
    meta, body = _frontmatter(text)
    relative = file.relative_to(folder).with_suffix("").as_posix()
    title = str(meta.get("title") or file.stem).strip()
    permalink = str(meta.get("permalink") or "").strip()
    where = str(file)
    fields: dict[str, list[str]] = {field: [] for field in _FIELDS}
    reasons: list[str] = []
    kept: list[str] = []
    fenced = False
    for line in body.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        taken = None if fenced else _take(line)
        if taken is None:
            kept.append(line)
            continue
        field, item, context = taken
        fields[field].append(item)
        if field == "decisions":
            reasons.append(context or NO_REASON)
    tail = []
    tags = meta.get("tags")
    if isinstance(tags, str):
        tags = [t.strip() for t in re.split(r"[,\s]+", tags) if t.strip()]
    if isinstance(tags, list) and tags:
        tail.append("Tags: " + ", ".join(str(t) for t in tags))
    if meta.get("type"):
        tail.append(f"Type: {meta['type']}")
    prose = _tidy(kept)
    summary = c.summary(f"# {title}\n\n{prose}" if prose else f"# {title}", tail, where, title)
    args = c.record(c.name("basic-memory", permalink or relative), summary, SOURCE)
    args["decisions"] = c.decisions(zip(fields.pop("decisions"), reasons, strict=True), where)
    for field, values in fields.items():
        args[field] = c.items(values, where)
    return args


def _take(line: str) -> tuple[str, str, str] | None:
    """(field, text, context) for a list item one of the fields takes, else None."""
    item = _ITEM.match(line)
    if not item:
        return None
    rest = item["rest"]
    task = _TASK.match(rest)
    if task:
        return "todos", task["text"], ""
    observation = _OBSERVATION.match(rest)
    if not observation:
        return None
    field = _BY_CATEGORY.get(observation["category"].strip().lower())
    if field is None:
        return None
    text, context = observation["text"].strip(), ""
    with_context = _CONTEXT.match(text)
    if with_context:
        text, context = with_context["text"], with_context["context"].strip()
    return field, text if field == "decisions" else observation["text"].strip(), context


def _frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """The YAML frontmatter (basic-memory writes one on every note) and the body after it."""
    if not text.startswith("---"):
        return {}, text
    end = re.search(r"^---\s*$", text[3:], re.MULTILINE)
    if not end or not text[3:4].isspace():
        return {}, text
    raw, body = text[3 : 3 + end.start()], text[3 + end.end() :]
    import yaml  # type: ignore[import-untyped]  # lazily: the importers stay quick to import

    try:
        meta = yaml.safe_load(raw)
    except yaml.YAMLError:
        return {}, body
    return (meta if isinstance(meta, dict) else {}), body


def _tidy(lines: list[str]) -> str:
    """The kept lines, without headings left with nothing under them (an `## Observations`
    whose every line went to a field) and without runs of blank lines."""
    out: list[str] = []
    for i, line in enumerate(lines):
        heading = _HEADING.match(line)
        if heading:
            rest = (other for other in lines[i + 1 :] if other.strip())
            following = next(rest, None)
            nested = _HEADING.match(following) if following is not None else None
            if following is None or (nested and len(nested["level"]) <= len(heading["level"])):
                continue
        if not line.strip() and (not out or not out[-1].strip()):
            continue
        out.append(line.rstrip())
    return "\n".join(out).strip()
