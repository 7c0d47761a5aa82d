"""Session-start hooks: hand the latest session for this repo to a client as it starts.

`sessionvault hook session-start --client <client>` runs on every session start of Claude Code,
Codex or Gemini CLI and prints their SessionStart hook JSON; all three read the same shape:

    {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "<markdown>"}}

The hook must never slow down or break a start: one stateless JSON-RPC `tools/call` over plain
HTTP (no MCP handshake), a hard deadline of TIMEOUT_S for git and network together, and on any
failure a one-line note as the context and exit code 0. Imports stay light (stdlib plus
sessionvault.repo): no httpx2, mcp or psycopg on this path. `install_hooks` writes the hook into
each client's own settings file through the editing helpers of sessionvault.clients.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessionvault.repo import current_repo

if TYPE_CHECKING:
    from sessionvault.clients import ApplyResult

# Same values as clients.ENV_VAR and clients.DEFAULT_URL; not imported from there because
# clients pulls in tomlkit, which this per-start path does not need.
KEY_ENV = "SESSIONVAULT_API_KEY"
URL_ENV = "SESSIONVAULT_URL"
DEFAULT_URL = "http://127.0.0.1:8765/mcp"
PROTOCOL_VERSION = "2025-06-18"

TIMEOUT_S = 0.8  # git + connect + request + response, all together
CONTEXT_CAP = 2000  # characters of markdown handed to the model
_MAX_BODY = 1_000_000
_COMMAND = "sessionvault hook session-start"
_OURS = re.compile(r"(^|[\s/])sessionvault hook session-start(\s|$)")
DOCTOR = "run `sessionvault doctor`"


# --- HTTP -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str


def request(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float,
) -> Reply:
    """One HTTP request with the standard library (httpx2 would add ~70 ms of imports).

    `timeout` applies to each socket operation; wrap the call in `within` for a total limit.
    """
    from http.client import HTTPConnection, HTTPSConnection
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    conn_class = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    conn = conn_class(parts.hostname, parts.port, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        conn.request(method, target, body=body, headers=dict(headers or {}))
        response = conn.getresponse()
        return Reply(response.status, response.read(_MAX_BODY), response.getheader("content-type") or "")
    finally:
        conn.close()


def within(seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) with a hard wall-clock limit: raises TimeoutError when it runs longer.

    The call runs on a daemon thread, so an abandoned one (a hung git or server) is simply
    dropped when the process exits.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=run, name="sessionvault-hook", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {seconds} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def mcp_headers(key: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
    }


def rpc_body(method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


class ToolError(Exception):
    pass


def tool_result(reply: Reply) -> dict[str, Any]:
    """structuredContent of a tools/call answer (JSON, or the last event of an SSE stream)."""
    text = reply.body.decode("utf-8", "replace")
    if reply.content_type.startswith("text/event-stream"):
        events = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = events[-1] if events else ""
    message = json.loads(text)
    if "error" in message:
        raise ToolError(str(message["error"].get("message", "error")))
    result = message["result"]
    if result.get("isError"):
        parts = result.get("content") or [{}]
        raise ToolError(str(parts[0].get("text", "tool error")))
    structured = result.get("structuredContent")
    if not isinstance(structured, dict):
        structured = json.loads(result["content"][0]["text"])
    return structured


# --- The context ------------------------------------------------------------------------


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


def _fetch(url: str, key: str, cwd: Path | None, timeout: float) -> tuple[str, Reply]:
    repo = current_repo(cwd)
    body = rpc_body("tools/call", {"name": "load_session", "arguments": {"repo": repo, "mode": "normal"}})
    return repo, request("POST", url, body=body, headers=mcp_headers(key), timeout=timeout)


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
        repo, reply = within(timeout, _fetch, url, key, cwd, timeout)
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
        session = tool_result(reply)
    except ToolError as exc:
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


# --- Installing the hook ------------------------------------------------------------------


@dataclass(frozen=True)
class HookSpec:
    title: str
    path: Callable[[Path, Path], Path]  # (home, cwd) -> settings file
    matcher: str  # which session starts: Claude Code and Codex take a regex, Gemini an exact value
    extra: Mapping[str, Any] = field(default_factory=dict)  # more keys of the hook entry

    def group(self, command: str) -> dict[str, Any]:
        """One SessionStart matcher group holding our hook."""
        return {"matcher": self.matcher, "hooks": [{"type": "command", "command": command, **self.extra}]}


HOOK_CLIENTS: dict[str, HookSpec] = {
    "claude-code": HookSpec(
        title="Claude Code",
        path=lambda home, cwd: home / ".claude" / "settings.json",
        matcher="startup|clear",
        extra={"timeout": 5},  # seconds
    ),
    "codex": HookSpec(
        title="OpenAI Codex",
        path=lambda home, cwd: home / ".codex" / "hooks.json",
        matcher="startup|clear",
        extra={"timeout": 5, "statusMessage": "Loading the last SessionVault session"},
    ),
    "gemini": HookSpec(
        title="Gemini CLI",
        path=lambda home, cwd: home / ".gemini" / "settings.json",
        matcher="startup",  # lifecycle matchers are compared as exact strings
        extra={"name": "sessionvault", "timeout": 5000, "description": "Load the last SessionVault session"},
    ),
}


def _hook_spec(client: str) -> HookSpec:
    try:
        return HOOK_CLIENTS[client]
    except KeyError:
        raise ValueError(
            f"{client!r} has no session-start hook; hooks exist for {', '.join(HOOK_CLIENTS)}"
        ) from None


def hook_command(client: str, url: str | None = None) -> str:
    import shlex

    command = f"{_COMMAND} --client {client}"
    if url and url != DEFAULT_URL:
        command += f" --url {shlex.quote(url)}"
    return command


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and bool(_OURS.search(str(hook.get("command", ""))))


def _merged(groups: list[Any], ours: dict[str, Any]) -> list[Any] | None:
    """`groups` with our group in it exactly once, or None when that is already so."""
    count = sum(_is_ours(h) for g in groups if isinstance(g, dict) for h in g.get("hooks") or [])
    if count == 1 and ours in groups:
        return None
    kept = []
    for group in groups:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(hooks, list) and any(_is_ours(h) for h in hooks):
            rest = [h for h in hooks if not _is_ours(h)]
            if not rest:
                continue  # the group held only our (older) hook
            group = {**group, "hooks": rest}
        kept.append(group)
    return [*kept, ours]


def _session_start_groups(data: Mapping[str, Any], path: Path) -> tuple[dict[str, Any], list[Any]]:
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError(f"{path}: 'hooks' is not an object; fix it by hand")
    groups = hooks.get("SessionStart", [])
    if not isinstance(groups, list):
        raise ValueError(f"{path}: 'hooks.SessionStart' is not a list; fix it by hand")
    return hooks, groups


def install_hooks(
    client: str,
    *,
    home: Path,
    cwd: Path,
    now: datetime | None = None,
    url: str | None = None,
) -> ApplyResult:
    """Add the session-start hook to the client's own settings, keeping everything else.

    Idempotent: when the hook is already there, nothing is written and no backup is made.
    Otherwise an older sessionvault hook is replaced, the old file is copied to
    `<file>.bak-YYYYmmddHHMMSS`, and the edit is re-parsed before it is written.
    """
    from sessionvault import clients

    spec = _hook_spec(client)
    path = spec.path(home, cwd)
    real = path.resolve()  # follow a symlinked settings file
    old = real.read_text(encoding="utf-8") if real.exists() else ""
    data = clients._json_load(old)
    hooks, groups = _session_start_groups(data, path)
    merged = _merged(groups, spec.group(hook_command(client, url)))
    if merged is None:
        return clients.ApplyResult(path=path, changed=False, backup=None)

    new = clients._json_put(old, "hooks", merged, name="SessionStart")
    expected = {**data, "hooks": {**hooks, "SessionStart": merged}}
    if clients._json_load(new) != expected:
        raise RuntimeError(f"{path}: could not edit the file safely; nothing was written")
    backup = clients._backup(real, old, now or datetime.now()) if real.exists() else None
    mode = real.stat().st_mode & 0o777 if real.exists() else 0o644
    clients._write_atomic(real, new, mode)
    return clients.ApplyResult(path=path, changed=True, backup=backup)


def hook_installed(client: str, *, home: Path, cwd: Path) -> bool:
    """Whether the client's settings hold a sessionvault session-start hook."""
    from sessionvault import clients

    path = _hook_spec(client).path(home, cwd)
    try:
        _, groups = _session_start_groups(clients._json_load(path.read_text(encoding="utf-8")), path)
    except (OSError, ValueError):
        return False
    return any(_is_ours(h) for g in groups if isinstance(g, dict) for h in g.get("hooks") or [])


# --- CLI ----------------------------------------------------------------------------------


def _add_events(events: argparse._SubParsersAction) -> None:
    p = events.add_parser(
        "session-start",
        help="print the latest session for this repo as start-up context",
        description="Print the latest session for the current repo in the client's SessionStart "
        "hook format. Always exits 0: on any problem it prints a short note instead.",
    )
    # A free string, not `choices`: a hook must never fail on its arguments.
    p.add_argument("--client", default="claude-code", help=f"{', '.join(OUTPUT)} (default: claude-code)")
    p.add_argument("--url", default=None, help=f"server URL (default: ${URL_ENV} or {DEFAULT_URL})")
    p.set_defaults(func=_run_session_start)


def add_hook_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `sessionvault hook session-start [--client] [--url]`."""
    p = subparsers.add_parser(
        "hook",
        help="commands that AI clients run as hooks",
        description="Commands that AI clients run as hooks; install them with "
        "`sessionvault connect <client> --apply --hooks`.",
    )
    _add_events(p.add_subparsers(dest="event", required=True, metavar="event"))


def _run_session_start(args: argparse.Namespace) -> int:
    try:
        sys.stdout.write(session_start(args.client, args.url) + "\n")
        sys.stdout.flush()
    except BaseException:  # e.g. a closed stdout: still exit 0, never a traceback
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    """`sessionvault hook ...` on its own: main(["session-start", "--client", "gemini"])."""
    parser = argparse.ArgumentParser(prog="sessionvault hook")
    _add_events(parser.add_subparsers(dest="event", required=True, metavar="event"))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
