"""What a session-start hook hands the model: the latest session for this repo as compact
markdown, its saved content framed as notes from an earlier session (data, not instructions:
see core/framing.py), in each client's SessionStart hook JSON. Claude Code, Codex, Gemini CLI
and Qwen Code read the same shape:

    {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "<markdown>"}}

Amazon Q Developer CLI adds an `agentSpawn` hook's whole stdout to the context as it is, so it
gets the markdown alone.

The hook must never slow down or break a start: one stateless `tools/call` (`rpc`), a hard
deadline of TIMEOUT_S for git and network together, and on any failure a one-line note as the
context. Imports stay light (stdlib, `rpc`, `repo`, `framing`): no httpx2, mcp, psycopg or tomlkit.

A session offered as a handoff to this client (or to any) is shown as an open handoff, with the
load_session call that would accept it: the hook itself only looks (mode normal, never accept),
so the offer stays open until a model claims it. When the session recorded the commit it was
saved at, the hook says how far this checkout moved since (commits, changed files, another
branch), computed locally with git in whatever is left of the deadline."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sessionvault.core import framing
from sessionvault.errors import ConfigError, ToolCallFailed
from sessionvault.local import config
from sessionvault.local.hook import hook_key
from sessionvault.local.hook.capture.spool import Spool
from sessionvault.local.hook.drift import Late, age, drift_line, handoff_line, measure_drift, open_offer, when
from sessionvault.local.hook.repo import Drift, current_repo
from sessionvault.local.remote import rpc
from sessionvault.names import KEY_ENV

TIMEOUT_S = 0.8  # git + connect + request + response, all together
CONTEXT_CAP = 2000  # characters of markdown handed to the model
DOCTOR = "run `sessionvault doctor`"


SUMMARY_CHARS = 800
ITEM_CHARS = 200
MIN_NOTES = 60  # below this many characters for the notes, use the short notice, then drop the heading
# The model may have SessionVault's tools or not (a client connected without them, a headless
# run that offers none): the way that needs no tool is named too.
HINT = (
    "Full record: call load_session with the session name from the notes; without SessionVault's "
    "tools, `sessionvault sessions show <name>` or the web view shows it."
)
FALLBACK = (
    "SessionVault: a saved session exists for this repo; call load_session (or run "
    "`sessionvault sessions list`) to see it."
)


def _notes(session: Mapping[str, Any], budget: int, drift: str = "") -> list[str]:
    """The lines inside the fence, at most `budget` characters joined: every one a label of our
    own followed by flattened saved values (framing.flatten), so no saved text starts a line.
    `drift` (file and branch names of this checkout: a cloned repo chooses them) goes in here
    too, after the saved anchor, never among our own lines outside the fence."""
    name = framing.flatten(session.get("name", ""), 200)
    version = framing.flatten(session.get("version", "?"), 20)
    by = f" by {framing.flatten(session['client'], 100)}" if session.get("client") else ""
    kind = "automatic checkpoint" if session.get("automatic") else "saved"
    offered = session.get("handoff") if isinstance(session.get("handoff"), Mapping) else {}
    if session.get("workspace"):  # a teammate's: the space and who offered it, as saved values
        by += f" in workspace {framing.flatten(session['workspace'], 100)}"
    if offered and offered.get("offered_by"):
        by += f", offered by {framing.flatten(offered['offered_by'], 100)}"
    saved = framing.flatten(when(session.get("saved_at", "")), 60)
    summary = framing.flatten(session.get("summary", ""), SUMMARY_CHARS)
    lines = [
        framing.clip(f"**{name}** v{version}, {kind}{by} at {saved}", budget),
    ]
    used = len(lines[0])
    for line in (_anchor(session), drift):
        if line and used + 1 + len(line) < budget:
            lines.append(line)
            used += 1 + len(line)
    summary_line = framing.clip(f"**Summary:** {summary}", budget - used - 1)
    if not summary_line:
        return lines
    lines.append(summary_line)
    used += 1 + len(summary_line)

    def decision(d: Any) -> str:
        if isinstance(d, dict):
            what = framing.flatten(d.get("decision", ""), ITEM_CHARS)
            why = framing.flatten(d.get("reason", ""), ITEM_CHARS)
            return framing.clip(f"{what} (why: {why})", ITEM_CHARS)
        return framing.flatten(d, ITEM_CHARS)

    sections = [
        ("Next steps", [framing.flatten(t, ITEM_CHARS) for t in session.get("todos") or []]),
        ("Decisions", [decision(d) for d in session.get("decisions") or []]),
        ("Files", [framing.flatten(f, ITEM_CHARS) for f in session.get("files") or []]),
        ("Tried", [framing.flatten(t, ITEM_CHARS) for t in session.get("tried") or []]),
    ]
    for title, items in sections:
        if not items:
            continue
        block = [f"**{title}**"]
        size = 1 + len(block[0])
        kept = 0
        for i, item in enumerate(items):
            line = f"- {item}"
            rest = len(items) - i - 1
            more = 1 + len(f"- … {rest} more") if rest else 0
            # Keep room for the "… N more" line that would follow if the next item does not fit.
            if used + size + 1 + len(line) + more > budget:
                break
            block.append(line)
            size += 1 + len(line)
            kept += 1
        if kept == 0:
            break  # not even one item fits: later sections will not either
        if kept < len(items):
            block.append(f"- … {len(items) - kept} more")
            size += 1 + len(block[-1])
        lines += block
        used += size
    return lines


def _anchor(session: Mapping[str, Any]) -> str:
    """The branch and commit the session was saved at, as a line of the notes (saved text)."""
    parts = []
    if session.get("branch"):
        parts.append(f"branch `{framing.code(session['branch'], 200)}`")
    if session.get("commit"):
        parts.append(f"commit {framing.flatten(session['commit'], 40)}")
    return f"**Saved on:** {', '.join(parts)}" if parts else ""


def render_session(
    session: Mapping[str, Any],
    cap: int = CONTEXT_CAP,
    *,
    client: str = "",
    repo: str = "",
    drift: Drift | Late | None = None,
    branch: str | None = None,
) -> str:
    """The session as compact markdown of at most `cap` characters: a heading, then the saved
    content framed as notes from an earlier session (framing.frame), never as markdown of its own.

    Inside the block the header line and summary come first (with the branch and commit it was
    saved at); then next steps, decisions, files and what was tried, each list cut short (with a
    count of what was left out) once the budget runs out. A small `cap` first shortens the
    notice, then drops the heading.

    Outside the block, lines of our own: an open handoff for `client` (or for anyone) and the
    load_session call that accepts it for `repo` (default: the session's). Inside it, after the
    saved anchor, the `drift` of this checkout since the saved commit (`branch`: the current one,
    when only a branch was saved): its file and branch names are the checkout's, not ours.
    """
    # Outside the fence only our own words and the repo of this checkout (the hook's, never a
    # saved value): a saved client, repo or name could say anything, and "automatic" is only a
    # name's prefix a caller chose (auto/...), so nothing is claimed about it out here.
    shown = framing.code(repo or "this repo", 200)
    heading = f"## SessionVault: last session for `{shown}`"
    if session.get("automatic"):
        heading = (
            f"## SessionVault: last checkpoint for `{shown}` ({age(str(session.get('saved_at') or ''))})"
        )
    offered = open_offer(session, client)
    extra = [handoff_line(offered, repo, client)] if offered is not None else []
    moved = drift_line(drift, str(session.get("branch") or ""), branch)
    heads: tuple[tuple[list[str], bool], ...] = (
        ([heading, *extra, HINT], False),
        ([heading, *extra], True),
        (extra, True),
        ([], True),
    )
    for head, short in heads:
        budget = cap - sum(len(line) + 1 for line in head) - framing.overhead(short)
        if budget >= MIN_NOTES:
            text = "\n".join([*head, framing.frame(_notes(session, budget, moved), short=short)])
            if len(text) <= cap:
                return text
    return framing.clip(FALLBACK, cap)


def _note(text: str) -> str:
    return f"SessionVault: {text}"


def _fetch(
    url: str, key: str, cwd: Path | None, timeout: float, client: str, spool: Spool
) -> tuple[str, rpc.Reply]:
    # A checkpoint still spooled (the server was down when the last client stopped) goes first:
    # it may be the very thing this start should show.
    spool.flush(url, key, timeout / 2)
    repo = current_repo(cwd)
    arguments = {"repo": repo, "mode": "normal", "client": client}
    body = rpc.rpc_body("tools/call", {"name": "load_session", "arguments": arguments})
    return repo, rpc.request("POST", url, body=body, headers=rpc.mcp_headers(key), timeout=timeout)


def session_context(
    url: str | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    client: str = "",
) -> str:
    """The markdown for the latest session of the repo at `cwd`, or a one-line note. Never raises.
    `client` (the hook's --client) decides which handoffs are open for this client. `timeout`:
    TIMEOUT_S, read at the call (a test that is not about the deadline raises it)."""
    started = time.monotonic()
    timeout = TIMEOUT_S if timeout is None else timeout
    env = os.environ if env is None else env
    try:
        cfg = config.load(env)
    except ConfigError as exc:  # a broken config.toml: said, and the start goes on
        return _note(f"{exc}; so no earlier session was loaded.")
    url = url or cfg.url
    key = hook_key.for_hooks(env, cfg.state, url)
    if not key:
        return _note(
            f"{KEY_ENV} is not set where this client runs, so no earlier session was loaded; {DOCTOR}."
        )
    try:
        spool = Spool(cfg.state)
        repo, reply = rpc.within(timeout, _fetch, url, key, cwd, timeout, client, spool)
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
        return _note(f"load_session failed: {framing.flatten(exc, 200)}")
    except (ValueError, LookupError, TypeError, AttributeError):
        return _note(f"unexpected answer from {url}; {DOCTOR}.")
    if not session.get("found"):
        return _note(
            f"no saved session for repo `{framing.code(repo, 300)}` yet. Before you stop or hand off, "
            f"call save_session with repo {framing.quote(repo, 300)}."
        )
    drift, branch = measure_drift(session, cwd, timeout - (time.monotonic() - started))
    return render_session(session, client=client, repo=repo, drift=drift, branch=branch)


def _session_start_json(context: str) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}})


def _plain(context: str) -> str:
    return context


def _additional_context(context: str) -> str:
    """GitHub Copilot CLI: a flat object (its nested Claude Code shape never reached the model)."""
    return json.dumps({"additionalContext": context})


# How each client wants session-start output on stdout. Four take the same JSON (Claude Code
# and Codex would also take plain text; Gemini CLI and Qwen Code require JSON); Amazon Q would
# hand JSON to the model verbatim, so it gets the markdown itself.
OUTPUT: dict[str, Callable[[str], str]] = {
    "claude-code": _session_start_json,
    "codex": _session_start_json,
    "gemini": _session_start_json,
    "qwen": _session_start_json,
    "amazon-q": _plain,
    "copilot-cli": _additional_context,
    "cline-cli": _plain,  # a rule of our Cline plugin: its text goes into the system prompt as is
    "kilo-code": _plain,  # our Kilo Code plugin adds it to the system prompt as is
    "opencode": _plain,  # so does our OpenCode plugin (the same plugin)
}


def session_start(
    client: str = "claude-code",
    url: str | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> str:
    """The hook's whole stdout for `client`. Never raises."""
    try:
        context = session_context(url, cwd=cwd, env=env, timeout=timeout, client=client)
    except Exception as exc:  # a bug here must not break the client's start
        context = _note(f"hook failed ({type(exc).__name__}); {DOCTOR}.")
    return OUTPUT.get(client, _session_start_json)(context)
