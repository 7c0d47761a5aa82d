"""What a session-start hook hands the model: the latest session for this repo as compact
markdown, in each client's SessionStart hook JSON. All three hook clients read the same shape:

    {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "<markdown>"}}

The hook must never slow down or break a start: one stateless `tools/call` (`rpc`), a hard
deadline of TIMEOUT_S for git and network together, and on any failure a one-line note as the
context. Imports stay light (stdlib, `rpc`, `repo`): no httpx2, mcp, psycopg or tomlkit."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from sessionvault.errors import ToolCallFailed
from sessionvault.local import rpc
from sessionvault.local.repo import current_repo
from sessionvault.names import DEFAULT_URL, KEY_ENV, URL_ENV

TIMEOUT_S = 0.8  # git + connect + request + response, all together
CONTEXT_CAP = 2000  # characters of markdown handed to the model
DOCTOR = "run `sessionvault doctor`"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _one_line(text: Any, limit: int) -> str:
    return _clip(" ".join(str(text).split()), limit)


def _when(saved_at: str) -> str:
    try:
        moment = datetime.fromisoformat(saved_at)
    except (TypeError, ValueError):
        return str(saved_at or "an unknown time")
    if moment.utcoffset() is not None and not moment.utcoffset():
        return f"{moment:%Y-%m-%d %H:%M} UTC"
    return moment.isoformat(sep=" ", timespec="minutes")


def render_session(session: Mapping[str, Any], cap: int = CONTEXT_CAP) -> str:
    """The session as compact markdown of at most `cap` characters.

    Header and summary come first; then next steps, decisions, files and what was tried,
    each list cut short (with a count of what was left out) once the budget runs out.
    """
    name = str(session.get("name", ""))
    by = f" by {session['client']}" if session.get("client") else ""
    head = [
        f"## SessionVault: last session for `{session.get('repo') or 'this repo'}`",
        f"**{name}** v{session.get('version', '?')}, saved{by} at {_when(session.get('saved_at', ''))}. "
        f'Full record: load_session with name "{name}".',
        "",
        f"**Summary:** {_clip(str(session.get('summary', '')).strip(), 800)}",
    ]
    decisions = [
        f"{d.get('decision', '')} (why: {d.get('reason', '')})" if isinstance(d, dict) else str(d)
        for d in session.get("decisions") or []
    ]
    sections = [
        ("Next steps", session.get("todos") or []),
        ("Decisions", decisions),
        ("Files", session.get("files") or []),
        ("Tried", session.get("tried") or []),
    ]
    text = "\n".join(head)
    if len(text) > cap:
        return text[: cap - 1] + "…"
    for title, items in sections:
        if not items:
            continue
        lines = [f"- {_one_line(item, 200)}" for item in items]
        block = f"\n\n**{title}**"
        kept = 0
        for i, line in enumerate(lines):
            rest = len(lines) - i - 1
            more = f"\n- … {rest} more" if rest else ""
            # Keep room for the "… N more" line that would follow if the next item does not fit.
            if len(text) + len(block) + 1 + len(line) + len(more) > cap:
                break
            block += "\n" + line
            kept += 1
        if kept == 0:
            break  # not even one item fits: later sections will not either
        if kept < len(lines):
            block += f"\n- … {len(lines) - kept} more"
        text += block
    return text


def _note(text: str) -> str:
    return f"SessionVault: {text}"


def _fetch(url: str, key: str, cwd: Path | None, timeout: float) -> tuple[str, rpc.Reply]:
    repo = current_repo(cwd)
    body = rpc.rpc_body("tools/call", {"name": "load_session", "arguments": {"repo": repo, "mode": "normal"}})
    return repo, rpc.request("POST", url, body=body, headers=rpc.mcp_headers(key), timeout=timeout)


def session_context(
    url: str | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = TIMEOUT_S,
) -> str:
    """The markdown for the latest session of the repo at `cwd`, or a one-line note. Never raises."""
    env = os.environ if env is None else env
    url = url or env.get(URL_ENV) or DEFAULT_URL
    key = env.get(KEY_ENV, "").strip()
    if not key:
        return _note(
            f"{KEY_ENV} is not set where this client runs, so no earlier session was loaded; {DOCTOR}."
        )
    try:
        repo, reply = rpc.within(timeout, _fetch, url, key, cwd, timeout)
    except TimeoutError:
        return _note(f"no answer from {url} within {timeout} s, so no earlier session was loaded; {DOCTOR}.")
    except OSError:
        return _note(f"server not reachable at {url}, so no earlier session was loaded; {DOCTOR}.")
    except Exception as exc:
        return _note(f"could not reach {url} ({type(exc).__name__}); {DOCTOR}.")
    if reply.status == 401:
        return _note(f"the server at {url} refused the API key in {KEY_ENV} (401); {DOCTOR}.")
    if reply.status == 429:
        return _note("rate limited; the last session was not loaded this time (call load_session later).")
    if reply.status != 200:
        return _note(f"{url} answered HTTP {reply.status}; {DOCTOR}.")
    try:
        session = rpc.tool_result(reply)
    except ToolCallFailed as exc:
        return _note(f"load_session failed: {_one_line(exc, 200)}")
    except (ValueError, LookupError, TypeError, AttributeError):
        return _note(f"unexpected answer from {url}; {DOCTOR}.")
    if not session.get("found"):
        return _note(
            f"no saved session for repo `{repo}` yet. Before you stop or hand off, "
            f'call save_session with repo "{repo}".'
        )
    return render_session(session)


def _session_start_json(context: str) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}})


# How each client wants SessionStart output on stdout. Today all three take the same JSON
# (Claude Code and Codex would also take plain text; Gemini CLI requires JSON).
OUTPUT: dict[str, Callable[[str], str]] = {
    "claude-code": _session_start_json,
    "codex": _session_start_json,
    "gemini": _session_start_json,
}


def session_start(
    client: str = "claude-code",
    url: str | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = TIMEOUT_S,
) -> str:
    """The hook's whole stdout for `client`. Never raises."""
    try:
        context = session_context(url, cwd=cwd, env=env, timeout=timeout)
    except Exception as exc:  # a bug here must not break the client's start
        context = _note(f"hook failed ({type(exc).__name__}); {DOCTOR}.")
    return OUTPUT.get(client, _session_start_json)(context)
