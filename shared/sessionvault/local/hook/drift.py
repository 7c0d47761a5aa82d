"""The hook's own lines about a handoff and the code since it was saved: an open offer and the
call that would accept it, and how far this checkout moved since the saved commit (commits,
changed files, another branch), from local git only, within the hook's deadline. No saved text
goes into these lines (that stays inside the framed notes, `context`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from sessionvault.core import framing
from sessionvault.local.hook.repo import Drift, current_branch, drift_since, is_commit
from sessionvault.local.remote import rpc


def when(saved_at: str) -> str:
    try:
        moment = datetime.fromisoformat(saved_at)
    except (TypeError, ValueError):
        return str(saved_at or "an unknown time")
    if moment.utcoffset() is not None and not moment.utcoffset():
        return f"{moment:%Y-%m-%d %H:%M} UTC"
    return moment.isoformat(sep=" ", timespec="minutes")


def age(saved_at: str, now: datetime | None = None) -> str:
    """How long ago `saved_at` was, roughly: "just now", "12 min ago", "3 h ago", "2 days ago"."""
    try:
        moment = datetime.fromisoformat(saved_at)
        seconds = ((now or datetime.now(moment.tzinfo)) - moment).total_seconds()
    except (TypeError, ValueError):
        return "at an unknown time"
    if seconds < 60:
        return "just now"
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


# What the hook learned about git drift: a report, nothing to say, or no time left to find out.
Late = Literal["late"]
LATE: Late = "late"
NAMES_CHARS = 80  # per changed file named in a drift line


def open_offer(session: Mapping[str, Any], client: str) -> Mapping[str, Any] | None:
    """The session's handoff if it is open for `client`: offered to anyone, or to `client`."""
    offered = session.get("handoff")
    if not isinstance(offered, Mapping) or offered.get("state") != "open":
        return None
    target = offered.get("to_client") or ""
    return offered if not target or target == client else None


def handoff_line(offered: Mapping[str, Any], repo: str, client: str) -> str:
    """Our own line about an open handoff and how to accept it (no saved text in it)."""
    to = f"this client ({framing.code(client, 100)})" if offered.get("to_client") else "any client"
    if offered.get("to_person"):  # a teammate offered it to this person (who: in the notes)
        to = "you, from a teammate (see the notes)"
    until = framing.flatten(when(offered.get("expires_at") or ""), 60)
    call = f"repo={framing.quote(repo, 300)}, accept=true"
    if client:
        call += f", client={framing.quote(client, 100)}"
    return (
        f"**Open handoff** for {to}, open until {until}: offered, not claimed. To take it over, call "
        f"load_session with {call}; that claims it exactly once (another client may take it first)."
    )


def _short(commit: str | None) -> str:
    return (commit or "")[:12]


def _branch_note(drift_branch: str | None, saved: str) -> str:
    """Whether the checkout is on another branch than the saved one (named only in the notes)."""
    if not saved or not drift_branch or drift_branch == saved:
        return ""
    if drift_branch == "HEAD":
        return "HEAD is detached, not on the branch it was saved on (see the notes)"
    return f"now on branch `{framing.code(drift_branch, 100)}`, not the one it was saved on (see the notes)"


def drift_line(drift: Drift | Late | None, saved_branch: str = "", current: str | None = None) -> str:
    """Our own line on how far this checkout moved since the saved commit: from local git only
    (file and branch names of this checkout, the commit id checked to be hex), never saved text.
    `current` is the branch when only a branch was saved (no commit); "" when nothing is known."""
    if drift == LATE:
        return "**Code since it was saved:** not checked (no time left within the hook's deadline)."
    if drift is None:
        note = _branch_note(current, saved_branch)
        return f"**Code since it was saved:** {note}." if note else ""
    commit = _short(drift.commit)
    if drift.head is None:
        return f"**Code since it was saved:** unknown: no git commits here to compare with commit {commit}."
    branch = _branch_note(drift.branch, saved_branch)
    if not drift.known:
        text = (
            f"**Code since it was saved:** commit {commit} is not in this clone (not fetched, or history "
            "rewritten), so commits and changed files since are unknown"
        )
        return f"{text}; {branch}." if branch else f"{text}."
    if not drift.commits and not drift.changed:
        text = f"**Code since it was saved:** unchanged: HEAD is at commit {commit}, no files changed since"
        return f"{text}; {branch}." if branch else f"{text}."
    commits = f"{drift.commits} commit{'' if drift.commits == 1 else 's'}"
    parts = [f"{commits} since commit {commit} (HEAD now {_short(drift.head)})"]
    if drift.changed:
        named = ", ".join(f"`{framing.code(f, NAMES_CHARS)}`" for f in drift.files)
        more = drift.changed - len(drift.files)
        named += f", … {more} more" if more > 0 else ""
        files = f"{drift.changed} file{'' if drift.changed == 1 else 's'} changed (committed or not): {named}"
        parts.append(files)
    else:
        parts.append("no files changed")
    if branch:
        parts.append(branch)
    return f"**Code since it was saved:** {'; '.join(parts)}."


def measure_drift(
    session: Mapping[str, Any], cwd: Path | None, seconds: float
) -> tuple[Drift | Late | None, str | None]:
    """(drift since the session's commit, the current branch when only a branch was saved),
    within `seconds`: git runs only if the session recorded a commit or a branch."""
    commit, saved_branch = session.get("commit"), session.get("branch")
    if not is_commit(commit) and not saved_branch:
        return None, None
    if seconds <= 0:
        return LATE, None
    try:
        if is_commit(commit):
            return rpc.within(seconds, drift_since, commit, cwd), None
        return None, rpc.within(seconds, current_branch, cwd)
    except TimeoutError:
        return LATE, None
    except Exception:
        return None, None
