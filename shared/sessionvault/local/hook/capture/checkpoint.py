"""A Transcript made into the arguments of one save_session call, within the record's caps.

What goes where (docs/capture.md says the same to users):
- summary: what the user last asked, the client's last reply, then its own compaction summary
  if it wrote one, so the next tool knows the question, the answer and the story so far;
- plan: every task of the client's own task list with its state, in the order made;
- todos: the tasks not yet done (what the next tool should pick up);
- files: the files created or edited, most recently touched last;
- errors: the commands that failed, each with its error line;
- tried: the user's earlier requests, oldest first (the latest one leads the summary);
- repo, branch, commit: where the checkout stood, as the laptop sees it (local/hook/repo.py);
- name: `auto/<client>/<client session id>` (core/checkpoints.py), client: the client's id.

Every text is taken without its `<private>` spans and without what it repeats of a private file
(private.py), then scrubbed of secrets (core/redact.py), and only then clipped to its cap: a
key cut short before scrubbing would keep its secret part. The hook scrubs the whole record once
more, and so does the server.
"""

from __future__ import annotations

import re
from typing import Any

from sessionvault.core.checkpoints import checkpoint_name
from sessionvault.core.records import MAX_ITEMS, MAX_NAME, MAX_TEXT

from . import private
from .shell import WITHHELD
from .transcript import Transcript, clip, scrubbed

_STATE = {"completed": "done", "in_progress": "doing", "pending": "todo", "cancelled": "dropped"}
_OPEN = frozenset({"pending", "in_progress"})
_SESSION_ID = re.compile(r"[^A-Za-z0-9._-]")
ASK_CHARS = 600  # the latest request, as it leads the summary


def build(
    transcript: Transcript, *, repo: str, branch: str | None, commit: str | None
) -> dict[str, Any] | None:
    """save_session arguments for `transcript`; None when there is nothing to hand over: no
    reply, task, file or failure yet (a bare request, say a run whose model never answered,
    must not become the newest checkpoint of the repo and hide real work)."""
    asks = [a.strip() for a in transcript.asks if a.strip()]
    worked = transcript.last_message.strip() or transcript.compact_summary.strip()
    if not (worked or transcript.todos or transcript.files or transcript.failures):
        return None
    summary = _summary(transcript, asks)
    tasks = list(transcript.todos.items())
    items = _Items(transcript)
    args: dict[str, Any] = {
        "name": _name(transcript),
        "summary": summary,
        "repo": repo,
        "client": transcript.client,
        "plan": items(f"[{_STATE.get(status, status)}] {text}" for text, status in tasks),
        "todos": items(
            text + (" (in progress)" if status == "in_progress" else "")
            for text, status in tasks
            if status in _OPEN
        ),
        "files": items(transcript.files),
        "errors": items(_failure(transcript, f) for f in transcript.failures),
        "tried": items(f"asked: {a}" for a in asks[:-1]),
    }
    if branch:
        args["branch"] = branch[:200]
    if commit:
        args["commit"] = commit
    return args


def _name(transcript: Transcript) -> str:
    session = _SESSION_ID.sub("-", transcript.session_id)[:80] or "unknown"
    return checkpoint_name(transcript.client, session)[:MAX_NAME]


def _summary(transcript: Transcript, asks: list[str]) -> str:
    """The last request, the last reply (the newest word), then the client's own compaction
    summary (the story so far, when it wrote one), within MAX_TEXT."""
    parts = []
    if asks:
        parts.append(f"Asked: {_clean(transcript, asks[-1], ASK_CHARS)}")
    if transcript.last_message.strip():
        parts.append(f"Last reply: {_clean(transcript, transcript.last_message.strip(), MAX_TEXT)}")
    if transcript.compact_summary.strip():
        parts.append(
            f"Compaction summary: {_clean(transcript, transcript.compact_summary.strip(), MAX_TEXT)}"
        )
    return clip("\n\n".join(parts), MAX_TEXT)


def _clean(transcript: Transcript, text: str, keep: int) -> str:
    """`text` without `<private>` spans, private files' lines and secrets, within `keep`."""
    text = private.withhold(private.without_spans(text), transcript.withheld, transcript.is_private)
    return scrubbed(text, keep)


def _failure(transcript: Transcript, entry: str) -> str:
    """A failure's entry without its error line when its command names a file private to this
    repo (its own patterns: the reader's entry already knows the defaults')."""
    named = private.names_private(entry, transcript.is_private)
    if not named or WITHHELD in entry:
        return entry
    command_end = entry.find(": ", entry.find(named))
    return entry if command_end < 0 else f"{entry[:command_end]}: {WITHHELD}"


class _Items:
    """A list's entries, cleaned (`_clean`): at most MAX_ITEMS, the most recent kept; each within
    MAX_TEXT. Only the kept ones are scrubbed."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript

    def __call__(self, values: Any) -> list[str]:
        kept = [str(v) for v in values if str(v).strip()][-MAX_ITEMS:]
        return [c for c in (_clean(self.transcript, v, MAX_TEXT) for v in kept) if c.strip()]
