"""A session as people read it, and what changed between two of its versions: the text
`sessions show` prints, the unified diff `sessions diff` prints (of that same text, so a diff
reads like the record), and the Markdown page `export --format markdown` writes per session.

Everything shown comes from stored sessions, which a model wrote: control characters (a
terminal escape sequence could rewrite the screen or the clipboard) are shown as `\\x1b`-style
escapes, never sent to the terminal as they are.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sessionvault.core import offers

# C0 and C1 controls and DEL, except newline and tab; and the bidirectional overrides.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
LISTS = (("plan", "Plan"), ("todos", "To do"), ("files", "Files"), ("errors", "Errors"), ("tried", "Tried"))


def clean(text: object) -> str:
    """`text` safe to print: every control character but newline and tab escaped."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), str(text))


def one_line(text: object, width: int = 0) -> str:
    """`text` on one line (for a table cell), cut to `width` characters with an ellipsis."""
    flat = " ".join(clean(text).split())
    return flat if not width or len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def handoff_text(offer: Mapping[str, Any] | None) -> str:
    """A version's handoff state in words ("" when it was never offered)."""
    if not offer:
        return ""
    state = str(offer.get("state", ""))
    to = f" to {offer['to_client']}" if offer.get("to_client") else ""
    if state == "accepted":
        by = offers.claimer(offer)
        at = f" at {offer['accepted_at']}" if offer.get("accepted_at") else ""
        return clean(f"accepted by {by}{at} (offered{to})")
    if state == "open":
        until = f", until {offer['expires_at']}" if offer.get("expires_at") else ""
        return clean(f"offered{to}, not accepted yet{until}")
    if state == "expired":
        at = f" at {offer['expired_at']}" if offer.get("expired_at") else ""
        return clean(f"offered{to}, expired{at}")
    if state == "superseded":
        return clean(f"offered{to}, superseded by a newer offer")
    return clean(state)


def offer_note(offer: Mapping[str, Any]) -> str:
    """A listing's note on a session's offer, naming the version offered: a listing shows the
    latest version, and the offer may be of an older one ("handoff open for v1" beside v2)."""
    state = clean(str(offer.get("state", "")))
    return (
        f"handoff {state} for v{offer['version']}" if offer.get("version") is not None else f"handoff {state}"
    )


def record_lines(record: Mapping[str, Any], handoff: Mapping[str, Any] | None = None) -> list[str]:
    """A record (save_session's fields) as text lines: summary, plan, decisions with their
    reasons, to-dos, files, errors, what was tried, where (repo, branch, commit, client) and
    the handoff state. Empty parts are left out."""
    out = ["Summary:"]
    out += _indented(str(record.get("summary", "")))
    for key, title in LISTS[:1]:
        out += _items(title, record.get(key), numbered=True)
    decisions = record.get("decisions") or []
    if decisions:
        out += ["", "Decisions:"]
        for d in decisions:
            entry = d if isinstance(d, Mapping) else {"decision": d}
            out += _indented(str(entry.get("decision", "")), "  - ")
            if entry.get("reason"):
                out += _indented(str(entry["reason"]), "    because: ", "             ")
    for key, title in LISTS[1:]:
        out += _items(title, record.get(key))
    where = [
        (label, record.get(key))
        for label, key in (("Repo", "repo"), ("Branch", "branch"), ("Commit", "commit"), ("Client", "client"))
    ]
    where.append(("Handoff", handoff_text(handoff)))
    shown = [(label, value) for label, value in where if value]
    if shown:
        out.append("")
        out += [f"{label + ':':9} {one_line(value)}" for label, value in shown]
    return out


def session_text(session: Mapping[str, Any]) -> str:
    """GET /session's answer as `sessions show` prints it: a heading, then the record."""
    version, latest = session.get("version"), session.get("latest_version")
    of = "" if version == latest else f" (the latest is {latest})"
    kept = session.get("versions") or []
    head = [
        clean(session.get("name", "")),
        f"version {version}{of}, saved {session.get('saved_at', '')}"
        + (f"; versions kept: {', '.join(map(str, kept))}" if len(kept) > 1 else ""),
    ]
    if session.get("automatic"):
        head.append("an automatic checkpoint (saved by an end-of-work hook)")
    return "\n".join([*head, "", *record_lines(session, session.get("handoff"))]) + "\n"


def version_label(name: str, version: Mapping[str, Any]) -> str:
    return clean(f"{name} v{version.get('version')} ({version.get('saved_at', '')})")


def unified(name: str, old: Mapping[str, Any], new: Mapping[str, Any], context: int = 3) -> list[str]:
    """The unified diff (lines without their newline) between two versions as GET
    /session/versions gives them, of the text `record_lines` makes of each; [] when alike."""
    before = record_lines(old.get("record") or {}, old.get("handoff"))
    after = record_lines(new.get("record") or {}, new.get("handoff"))
    return list(
        difflib.unified_diff(
            before, after, version_label(name, old), version_label(name, new), n=context, lineterm=""
        )
    )


def coloured(lines: Iterable[str]) -> Iterable[str]:
    """A diff's lines with the colours `git diff` uses (for a terminal)."""
    for line in lines:
        if line.startswith(("+++", "---")):
            yield f"\x1b[1m{line}\x1b[0m"
        elif line.startswith("@@"):
            yield f"\x1b[36m{line}\x1b[0m"
        elif line.startswith("+"):
            yield f"\x1b[32m{line}\x1b[0m"
        elif line.startswith("-"):
            yield f"\x1b[31m{line}\x1b[0m"
        else:
            yield line


def markdown(session: Mapping[str, Any]) -> str:
    """One export line (a session with every kept version) as a Markdown page: newest version
    first, each whole."""
    versions: Sequence[Mapping[str, Any]] = session.get("versions") or []
    name = clean(session.get("name", ""))
    out = [f"# {_md(name)}", ""]
    if session.get("repo"):
        out.append(f"- Repository: `{one_line(session['repo'])}`")
    out.append(f"- Versions kept: {len(versions)}")
    if versions:
        out.append(f"- Last saved: {one_line(versions[-1].get('saved_at', ''))}")
    for i, version in enumerate(reversed(versions)):
        latest = " (latest)" if i == 0 else ""
        out += ["", f"## Version {version.get('version')}{latest}", ""]
        out += _md_record(version.get("record") or {}, version)
    return "\n".join(out) + "\n"


def _md_record(record: Mapping[str, Any], version: Mapping[str, Any]) -> list[str]:
    facts = [
        ("Saved", version.get("saved_at")),
        ("Client", record.get("client")),
        ("Branch", record.get("branch")),
        ("Commit", record.get("commit")),
        ("Handoff", handoff_text(version.get("handoff"))),
    ]
    out = [f"- {label}: {one_line(value)}" for label, value in facts if value]
    out += ["", "### Summary", "", clean(record.get("summary", "")).strip() or "_(none)_"]
    if record.get("plan"):
        out += ["", "### Plan", ""]
        out += [f"{n}. {one_line(step)}" for n, step in enumerate(record["plan"], start=1)]
    if record.get("decisions"):
        out += ["", "### Decisions", ""]
        for d in record["decisions"]:
            entry = d if isinstance(d, Mapping) else {"decision": d}
            reason = f" — because {one_line(entry['reason'])}" if entry.get("reason") else ""
            out.append(f"- **{_md(one_line(entry.get('decision', '')))}**{reason}")
    for key, title in LISTS[1:]:
        if record.get(key):
            out += ["", f"### {title}", ""]
            out += [f"- {one_line(item)}" for item in record[key]]
    return out


def _md(text: str) -> str:
    """Text that ends a Markdown emphasis or starts a construct, escaped."""
    return re.sub(r"([\\`*_\[\]#<>])", r"\\\1", text)


def _indented(text: str, first: str = "  ", rest: str = "") -> list[str]:
    lines = clean(text).splitlines() or [""]
    rest = rest or " " * len(first)
    return [first + lines[0], *(rest + line for line in lines[1:])]


def _items(title: str, items: Any, numbered: bool = False) -> list[str]:
    if not items:
        return []
    out = ["", f"{title}:"]
    for n, item in enumerate(items, start=1):
        out += _indented(str(item), f"  {n}. " if numbered else "  - ")
    return out
