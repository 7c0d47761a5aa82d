"""What every importer shares: the record's caps and the ways a long text is made to fit.

The caps are core/records.py's (tests/integration/test_importers.py holds them equal); they are
repeated here so that importing an importer does not import pydantic."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessionvault.errors import ValidationFailed

MAX_TEXT = 4000  # = records.MAX_TEXT: every string in the record
MAX_ITEMS = 200  # = records.MAX_ITEMS: every list
MAX_NAME = 200  # = records.MAX_NAME
MAX_CLIENT = 300  # = records.MAX_REPO, the cap on `client`

# What one import may read: an importer runs on a folder or database someone else may have
# filled, so it is bounded like a request. One item (a note, a memory, an instructions file) as
# large as a whole save may be (1 MB); one import as large as the API's import body (50 MB); and
# ten times the default per-user session quota in items.
MAX_ITEM_BYTES = 1_000_000
MAX_IMPORT_BYTES = 50_000_000
MAX_IMPORT_ITEMS = 10_000

_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass
class Budget:
    """What one import has read so far, against the caps above: `take` refuses, with an error
    that names the item and the cap, the item that would go over one."""

    items: int = 0
    bytes: int = 0
    max_item_bytes: int = field(default_factory=lambda: MAX_ITEM_BYTES)
    max_bytes: int = field(default_factory=lambda: MAX_IMPORT_BYTES)
    max_items: int = field(default_factory=lambda: MAX_IMPORT_ITEMS)

    def take(self, size: int, what: str) -> None:
        if size > self.max_item_bytes:
            raise ValidationFailed(
                f"{what} is {size:,} bytes, over the {self.max_item_bytes:,}-byte cap on one item; "
                "nothing was imported"
            )
        if self.items + 1 > self.max_items:
            raise ValidationFailed(
                f"more than {self.max_items:,} items to import (at {what}); nothing was imported: "
                "import a smaller part at a time"
            )
        if self.bytes + size > self.max_bytes:
            raise ValidationFailed(
                f"more than {self.max_bytes:,} bytes to import (at {what}); nothing was imported: "
                "import a smaller part at a time"
            )
        self.items += 1
        self.bytes += size


def read_inside(file: Path, root: Path, budget: Budget, *, links: bool = False) -> str:
    """The text of `file`, a regular file inside the folder `root` (resolved by the caller),
    charged to `budget`. Without `links` the file itself must not be a symbolic link (it is
    opened with O_NOFOLLOW, so it cannot become one between the check and the read); with
    `links` a link is followed only to a regular file whose resolved path is inside `root`.
    Anything else (a link out of the folder, a FIFO, a device, /proc) is a ValidationFailed."""
    resolved = file.resolve()
    if not resolved.is_relative_to(root):
        raise ValidationFailed(f"{file} leads outside {root}: only files inside the folder are imported")
    if not links and file.is_symlink():
        raise ValidationFailed(
            f"{file} is a symbolic link: only regular files inside the folder are imported "
            "(copy the file in instead)"
        )
    try:
        fd = os.open(resolved if links else file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise ValidationFailed(f"{file} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValidationFailed(f"{file} is not a regular file: only regular files are imported")
        budget.take(info.st_size, str(file))
        data = handle.read(budget.max_item_bytes + 1)
    if len(data) > info.st_size:  # it grew while being read: charge what was read
        budget.bytes += len(data) - info.st_size
        if len(data) > budget.max_item_bytes or budget.bytes > budget.max_bytes:
            raise ValidationFailed(f"{file} grew while it was read, over the import's caps")
    return data.decode("utf-8", errors="replace")


def clean(text: str) -> str:
    """No NUL (save_session refuses it) and no trailing blanks."""
    return text.replace("\x00", "").rstrip()


def cut(text: str, limit: int = MAX_TEXT, where: str = "") -> str:
    """`text` within `limit` characters; a cut one ends with a marker saying how much is missing
    and, with `where`, where the whole text still is."""
    text = clean(text)
    if len(text) <= limit:
        return text
    where = where[:300]
    keep = limit
    while True:  # the marker's length depends on the count it states: settle both
        marker = f"\n… [cut: {len(text) - keep} more characters"
        marker += f"; the whole text is in {where}]" if where else "]"
        settled = limit - len(marker)
        if settled >= keep:
            break
        keep = settled
    return text[:keep] + marker if keep > 0 else text[:limit]


def summary(body: str, tail: Iterable[str], where: str, fallback: str) -> str:
    """`body` then the `tail` lines (tags, dates: short and telling), within MAX_TEXT: the body
    is what gets cut, never the tail. Never empty (save_session needs a summary)."""
    lines = [clean(line) for line in tail if clean(line)]
    end = "\n\n" + "\n".join(lines) if lines else ""
    if len(end) > MAX_TEXT // 2:
        end = "\n\n" + cut("\n".join(lines), MAX_TEXT // 2)
    body = clean(body).strip()
    text = (cut(body, MAX_TEXT - len(end), where) if body else "") + end
    return text.strip() or cut(fallback)


def items(values: Iterable[str], where: str = "") -> list[str]:
    """At most MAX_ITEMS non-empty texts, each within MAX_TEXT; when more, the last item says how
    many were left out."""
    kept: list[str] = []
    left = 0
    for value in values:
        value = clean(value).strip()
        if not value:
            continue
        if len(kept) < MAX_ITEMS:
            kept.append(cut(value, MAX_TEXT, where))
        else:
            left += 1
    if left:
        kept[-1] = f"… and {left + 1} more (see {where or 'the source'})"
    return kept


def decisions(pairs: Iterable[tuple[str, str]], where: str = "") -> list[dict[str, str]]:
    """{decision, reason} items within the caps; both must be non-empty."""
    out: list[dict[str, str]] = []
    for decision, reason in pairs:
        decision, reason = clean(decision).strip(), clean(reason).strip()
        if decision and reason and len(out) < MAX_ITEMS:
            out.append({"decision": cut(decision, MAX_TEXT, where), "reason": cut(reason, MAX_TEXT, where)})
    return out


def slug(text: str, words: int = 6, limit: int = 48) -> str:
    """A few leading words of `text` for a readable session name: lower case, a-z0-9 and '-'."""
    picked = " ".join(text.split()[:words]).lower()
    return _SLUG.sub("-", picked).strip("-")[:limit].strip("-") or "untitled"


def name(*parts: str) -> str:
    """A session name from `parts` joined by '/', within MAX_NAME (the end is kept: it is the
    part that tells two sessions apart)."""
    joined = "/".join(clean(p).strip().strip("/") for p in parts if p and p.strip("/"))
    return (
        joined if len(joined) <= MAX_NAME else joined[: MAX_NAME // 2 - 1] + "…" + joined[-(MAX_NAME // 2) :]
    )


def record(
    name: str,
    summary: str,
    client: str,
    *,
    repo: str = "",
    plan: list[str] | None = None,
    decisions: list[dict[str, str]] | None = None,
    todos: list[str] | None = None,
    files: list[str] | None = None,
    errors: list[str] | None = None,
    tried: list[str] | None = None,
) -> dict[str, Any]:
    """save_session's arguments, every list present (empty lists included: the same content
    always gives the same record, so a second import adds no version)."""
    return {
        "name": name,
        "summary": summary,
        "repo": repo,
        "plan": plan or [],
        "decisions": decisions or [],
        "todos": todos or [],
        "files": files or [],
        "errors": errors or [],
        "tried": tried or [],
        "client": client[:MAX_CLIENT],
    }
