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
"""

from __future__ import annotations

import re
from typing import Any

from sessionvault.core.checkpoints import checkpoint_name
from sessionvault.core.records import MAX_ITEMS, MAX_NAME, MAX_TEXT

from .transcript import Transcript, clip

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
    args: dict[str, Any] = {
        "name": _name(transcript),
        "summary": summary,
        "repo": repo,
        "client": transcript.client,
        "plan": _items(f"[{_STATE.get(status, status)}] {text}" for text, status in tasks),
        "todos": _items(
            text + (" (in progress)" if status == "in_progress" else "")
            for text, status in tasks
            if status in _OPEN
        ),
        "files": _items(transcript.files),
        "errors": _items(transcript.failures),
        "tried": _items(f"asked: {a}" for a in asks[:-1]),
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
        parts.append(f"Asked: {clip(asks[-1], ASK_CHARS)}")
    if transcript.last_message.strip():
        parts.append(f"Last reply: {transcript.last_message.strip()}")
    if transcript.compact_summary.strip():
        parts.append(f"Compaction summary: {transcript.compact_summary.strip()}")
    return clip("\n\n".join(parts), MAX_TEXT)


def _items(values: Any) -> list[str]:
    """At most MAX_ITEMS, the most recent kept; each within MAX_TEXT."""
    kept = [clip(str(v), MAX_TEXT) for v in values if str(v).strip()]
    return kept[-MAX_ITEMS:]
