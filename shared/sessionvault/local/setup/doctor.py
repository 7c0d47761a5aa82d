"""`sessionvault doctor`: is the server up, is the key good, which clients point at it.

One line per check, ✓ or ✗ (· for a tip that is not a problem), and under each problem the one
command that fixes it. Exit code 0 when nothing is wrong, 1 otherwise.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

from sessionvault.errors import ConfigFileError
from sessionvault.local import config
from sessionvault.local.config import Config
from sessionvault.local.host import target
from sessionvault.local.remote import rpc
from sessionvault.local.setup import claude_code, files, registry
from sessionvault.local.setup.checks import Check, check_command, shown
from sessionvault.local.setup.doctor_hooks import check_hooks, check_spool
from sessionvault.names import DEFAULT_PORT, DEFAULT_URL, HOME_ENV, KEY_ENV, SERVER_NAME, URL_ENV

TIMEOUT_S = 3.0


def health_url(url: str) -> str:
    """`http://host:8765/mcp` -> `http://host:8765/health`."""
    parts = urlsplit(url)
    base = parts.path.rstrip("/").removesuffix("/mcp")
    return urlunsplit((parts.scheme, parts.netloc, base + "/health", "", ""))


def _same_url(a: Any, b: str) -> bool:
    return isinstance(a, str) and a.strip().rstrip("/") == b.strip().rstrip("/")


def _with_url(command: str, url: str, default: str = DEFAULT_URL) -> str:
    """`command`, with --url unless `url` is what the command resolves by itself."""
    return command if url == default else f"{command} --url {url}"


def check_state(cfg: Config) -> list[Check]:
    """Which state folder (and configuration) this machine's commands use. A missing one is a
    problem only when $SESSIONVAULT_HOME names it: the default one may rightly not exist (a
    remote server), and nothing here creates it."""
    problem = config.no_state(cfg)
    if not problem:
        where = f" (config: {cfg.file})" if cfg.file.exists() else ""
        return [Check(True, f"state folder {cfg.state}{where}")]
    if cfg.state_source == config.DEFAULT:
        return [Check(None, problem)]
    return [Check(False, problem, f"export {HOME_ENV}=<the folder your server uses>, or sessionvault dev")]


def check_server(url: str, timeout: float = TIMEOUT_S, dev_port: int = DEFAULT_PORT) -> Check:
    """`dev_port`: the port a plain `sessionvault dev` serves on here (the configured one)."""
    health = health_url(url)
    parts = urlsplit(url)
    if parts.hostname in rpc.LOOPBACK:
        port = parts.port or 80
        fix = "sessionvault dev" if port == dev_port else f"sessionvault dev --port {port}"
    else:
        fix = f"export {URL_ENV}=https://<your server>/mcp"
    try:
        reply = rpc.within(timeout, lambda: rpc.request("GET", health, timeout=timeout))
    except Exception as exc:
        return Check(False, f"server not reachable at {health} ({type(exc).__name__})", fix)
    if reply.status != 200:
        return Check(False, f"{health} answered HTTP {reply.status}: is {url} a SessionVault server?")
    return Check(True, f"server reachable at {health}")


def check_key(
    url: str, found: tuple[str, str], *, reachable: bool, timeout: float = TIMEOUT_S
) -> list[Check]:
    """`found`: the key and where it came from, as `target.default_key` resolves them."""
    key, source = found
    new_key = "sessionvault key create --label laptop"
    if not key:
        return [Check(False, f"{KEY_ENV} is not set", f"export {KEY_ENV}=sv_live_...")]
    if source == KEY_ENV:
        out = [Check(True, f"{KEY_ENV} is set ({key[:12]}...)")]
    else:  # the deployed stack's key file
        new_key = "sessionvault deploy --new-key"
        out = [
            Check(True, f"API key from {source} ({key[:12]}...)"),
            Check(None, f'clients that read ${KEY_ENV} need: export {KEY_ENV}="$(cat {source})"'),
        ]
    if not reachable:
        return out  # nothing to check it against
    body = rpc.rpc_body("tools/list")
    try:
        reply = rpc.within(
            timeout,
            lambda: rpc.request("POST", url, body=body, headers=rpc.mcp_headers(key), timeout=timeout),
        )
    except Exception as exc:
        out.append(Check(False, f"could not check the key: {url} failed ({type(exc).__name__})"))
        return out
    if reply.status == 200:
        out.append(Check(True, "the server accepts the key"))
    elif reply.status == 401:
        out.append(Check(False, "the server refuses the key (401: unknown, revoked or disabled)", new_key))
    elif reply.status == 429:
        out.append(Check(False, "rate limited (429): the key works but is over its limit; wait a minute"))
    else:
        out.append(Check(False, f"tools/list answered HTTP {reply.status} at {url}"))
    return out


def _entry_url(spec: registry.ClientSpec, entry: Mapping[str, Any]) -> Any:
    if spec.url_key is not None:
        return entry.get(spec.url_key)
    args = entry.get("args") or []  # the stdio bridge: [..., "--url", URL]
    return args[args.index("--url") + 1] if "--url" in args[:-1] else None


def _entry_argv(entry: Mapping[str, Any]) -> list[str] | None:
    """`[command, *args before "bridge"]` of a stdio bridge entry."""
    program, args = entry.get("command"), entry.get("args")
    if not isinstance(program, str) or not isinstance(args, list) or "bridge" not in args:
        return None
    return [program, *(str(a) for a in args[: args.index("bridge")])]


def check_clients(
    url: str, *, home: Path, cwd: Path, default: str = DEFAULT_URL, elsewhere: frozenset[str] = frozenset()
) -> tuple[list[Check], set[str]]:
    """One line per configured client; the names of the configured ones. `default`: the URL
    `connect` resolves without --url (its fixes leave --url out for that one); `elsewhere`:
    clients configured in another project (checked by `check_claude_projects`)."""
    out: list[Check] = []
    configured: set[str] = set()
    missing: list[str] = []
    for name, spec in registry.CLIENTS.items():
        path = registry.config_path(name, home=home, cwd=cwd)
        where = shown(path, home)
        if not path.exists():
            (configured.add if name in elsewhere else missing.append)(name)
            continue
        try:
            data = files.read(path, spec.fmt)
        except (OSError, ConfigFileError) as exc:
            out.append(Check(False, f"{spec.title}: {where} does not parse ({exc})", f"$EDITOR {path}"))
            continue
        servers = data.get(spec.container)
        entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
        if not isinstance(entry, dict):
            (configured.add if name in elsewhere else missing.append)(name)
            continue
        configured.add(name)
        got = _entry_url(spec, entry)
        fix = _with_url(f"sessionvault connect {name} --apply", url, default)
        if _same_url(got, url):
            out.append(Check(True, f"{spec.title}: {where} -> {url}"))
        else:
            out.append(Check(False, f"{spec.title}: {where} points to {got or 'no URL'}, not {url}", fix))
        if spec.url_key is None:  # a stdio entry: the client starts this command itself
            out.extend(
                check_command(
                    _entry_argv(entry), ["bridge", "--help"], f"{spec.title}: the bridge command", fix
                )
            )
    if not configured:
        out.append(
            Check(
                False,
                "no client is configured to use SessionVault",
                _with_url("sessionvault connect claude-code --apply", url, default),
            )
        )
    elif missing:
        out.append(
            Check(None, f"not configured: {', '.join(missing)} (sessionvault connect <client> --apply)")
        )
    return out, configured


def check_claude_projects(
    url: str,
    found: list[claude_code.Project],
    *,
    home: Path,
    here: Path,
    default: str = DEFAULT_URL,
    added: Sequence[claude_code.Added] = (),
) -> list[Check]:
    """Claude Code's projects whose `.mcp.json` holds our server (those it knows, from
    ~/.claude.json, and the current one): the URL (`here`, the current folder's file, was
    checked with the other clients) and whether the user approved the server there: until
    then Claude Code does not use it, and `claude mcp list` says "Pending approval"."""
    out: list[Check] = []
    for project in found:
        where, folder = shown(project.mcp_json, home), shown(project.folder, home)
        got = project.entry.get("url")
        if project.mcp_json != here and _same_url(got, url):
            out.append(Check(True, f"Claude Code: {where} -> {url}"))
        elif project.mcp_json != here:
            fix = f"cd {project.folder} && " + _with_url(
                "sessionvault connect claude-code --apply", url, default
            )
            out.append(Check(False, f"Claude Code: {where} points to {got or 'no URL'}, not {url}", fix))
        if project.approval == "approved":
            out.append(Check(True, f"Claude Code: the server is approved in {folder}"))
            continue
        why = "was rejected" if project.approval == "rejected" else 'is "Pending approval" (not approved yet)'
        step = claude_code.what_to_do(project.folder, project.approval)
        if any(a.folder in (None, project.folder) for a in added):  # what `claude mcp list` uses then
            text = f"Claude Code: the server in {where} {why} in {folder}; it uses the one in ~/.claude.json"
            out.append(Check(None, f"{text} ({step})"))
            continue
        text = f"Claude Code: the server in {where} {why} in {folder}: Claude Code does not use it"
        out.append(Check(False, text, step))
    if not found and not added and (home / claude_code.STATE).exists():
        out.append(
            Check(
                None,
                "Claude Code: none of the projects it knows (~/.claude.json) has SessionVault in its"
                " .mcp.json; check one with sessionvault doctor --project DIR",
            )
        )
    return out


def check_claude_added(
    url: str, found: list[claude_code.Added], *, home: Path, default: str = DEFAULT_URL
) -> list[Check]:
    """The servers `claude mcp add` recorded (user and local scopes of ~/.claude.json): Claude
    Code uses them with no approval, so only the URL is checked (issue 37: after the banner's
    `claude mcp add`, doctor said no client was configured)."""
    out: list[Check] = []
    state = shown(home / claude_code.STATE, home)
    for each in found:
        where = (
            f"{state} ({each.scope} scope{'' if each.folder is None else ', ' + shown(each.folder, home)})"
        )
        got = each.entry.get("url")
        if _same_url(got, url):
            out.append(Check(True, f"Claude Code: {where} -> {url}"))
            continue
        remove = f"claude mcp remove --scope {each.scope} {SERVER_NAME}"
        if each.folder is not None:
            remove = f"cd {each.folder} && {remove}"
        fix = f"{remove} && " + _with_url("sessionvault connect claude-code --apply", url, default)
        out.append(Check(False, f"Claude Code: {where} points to {got or 'no URL'}, not {url}", fix))
    return out


def run_checks(
    url: str, *, env: Mapping[str, str], home: Path, cwd: Path, timeout: float = TIMEOUT_S
) -> list[Check]:
    cfg = config.load(env, user_home=home)
    server = check_server(url, timeout, cfg.port)
    found = target.default_key(env, cfg.state, url)
    out = [*check_state(cfg), server, *check_key(url, found, reachable=server.ok is True, timeout=timeout)]
    default = str(target.server_url(cfg).value)
    here = registry.config_path("claude-code", home=home, cwd=cwd)
    claude = claude_code.projects(home, also=[here.parent])
    added = claude_code.added(home)
    elsewhere = frozenset({"claude-code"} if claude or added else ())
    client_checks, configured = check_clients(url, home=home, cwd=cwd, default=default, elsewhere=elsewhere)
    claude_checks = [
        *check_claude_added(url, added, home=home, default=default),
        *check_claude_projects(url, claude, home=home, here=here, default=default, added=added),
    ]
    hook_checks = check_hooks(configured, home=home, cwd=cwd, state=cfg.state)
    return out + client_checks + claude_checks + hook_checks + check_spool(cfg.state)


def run(
    url: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    cwd: Path | None = None,
    out: TextIO | None = None,
    timeout: float = TIMEOUT_S,
) -> int:
    """Print every check; 0 when none failed, 1 otherwise. The URL: `url`, else what the
    configuration resolves (`target.server_url`)."""
    env = os.environ if env is None else env
    home = home or Path.home()
    url = url or str(target.server_url(config.load(env, user_home=home)).value)
    out = out or sys.stdout
    checks = run_checks(url, env=env, home=home, cwd=cwd or Path.cwd(), timeout=timeout)
    print(f"SessionVault doctor: {url}", file=out)
    for check in checks:
        print("\n".join(check.lines()), file=out)
    failed = sum(check.ok is False for check in checks)
    print("all good" if not failed else f"{failed} problem(s)", file=out)
    return 1 if failed else 0
