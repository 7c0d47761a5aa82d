"""Connect MCP clients to a SessionVault server: config snippets and safe in-place edits.

Every client gets the same server (Streamable HTTP at `url`, `Authorization: Bearer <key>`),
but each spells it differently. `CLIENTS` holds those differences as data; the code below
builds one entry from a spec and writes it with one of two writers (JSON/JSONC, TOML).
Sources for each shape are listed in docs/clients.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import tomlkit

SERVER_NAME = "sessionvault"
ENV_VAR = "SESSIONVAULT_API_KEY"
DEFAULT_URL = "http://127.0.0.1:8765/mcp"


def _app_config(home: Path) -> Path:
    """Where Electron apps (Claude Desktop, VS Code) keep per-user config on this OS."""
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    return home / ".config"


@dataclass(frozen=True)
class ClientSpec:
    title: str
    path: Callable[[Path, Path], Path]  # (home, cwd) -> config file
    container: str  # top-level key that maps server names to entries
    # Key that holds the server URL; None means the client cannot send a header to a
    # remote server, so it launches the `sessionvault bridge` stdio command instead.
    url_key: str | None = "url"
    headers_key: str = "headers"
    fixed: Mapping[str, Any] = field(default_factory=dict)  # e.g. {"type": "http"}
    # How the client spells "the value of env var X" inside a header, or None if it can't.
    env_ref: str | None = None
    # Codex names the env var holding the bearer token instead of interpolating it.
    token_env_key: str | None = None
    fmt: Literal["json", "toml"] = "json"

    @property
    def reads_env(self) -> bool:
        return self.env_ref is not None or self.token_env_key is not None


CLIENTS: dict[str, ClientSpec] = {
    "claude-code": ClientSpec(
        title="Claude Code",
        # Project scope: the only scope where ${VAR} expansion is documented.
        path=lambda home, cwd: cwd / ".mcp.json",
        container="mcpServers",
        fixed={"type": "http"},
        env_ref="${%s}",
    ),
    "claude-desktop": ClientSpec(
        title="Claude Desktop",
        path=lambda home, cwd: _app_config(home) / "Claude" / "claude_desktop_config.json",
        container="mcpServers",
        url_key=None,
    ),
    "cursor": ClientSpec(
        title="Cursor",
        path=lambda home, cwd: home / ".cursor" / "mcp.json",
        container="mcpServers",
        env_ref="${env:%s}",
    ),
    "vscode": ClientSpec(
        title="VS Code (GitHub Copilot)",
        path=lambda home, cwd: _app_config(home) / "Code" / "User" / "mcp.json",
        container="servers",
        fixed={"type": "http"},
        env_ref="${env:%s}",
    ),
    "windsurf": ClientSpec(
        title="Windsurf",
        path=lambda home, cwd: home / ".codeium" / "windsurf" / "mcp_config.json",
        container="mcpServers",
        url_key="serverUrl",
        env_ref="${env:%s}",
    ),
    "codex": ClientSpec(
        title="OpenAI Codex",
        path=lambda home, cwd: home / ".codex" / "config.toml",
        container="mcp_servers",
        headers_key="http_headers",
        token_env_key="bearer_token_env_var",
        fmt="toml",
    ),
    "gemini": ClientSpec(
        title="Gemini CLI",
        path=lambda home, cwd: home / ".gemini" / "settings.json",
        container="mcpServers",
        url_key="httpUrl",
        env_ref="$%s",
    ),
    "opencode": ClientSpec(
        title="OpenCode",
        path=lambda home, cwd: home / ".config" / "opencode" / "opencode.json",
        container="mcp",
        fixed={"type": "remote", "enabled": True},
        env_ref="{env:%s}",
    ),
    "zed": ClientSpec(
        title="Zed",
        path=lambda home, cwd: home / ".config" / "zed" / "settings.json",
        container="context_servers",
    ),
    "cline": ClientSpec(
        title="Cline (VS Code extension)",
        path=lambda home, cwd: (
            _app_config(home)
            / "Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"
        ),
        container="mcpServers",
        # Without an explicit type Cline treats a bare `url` as the legacy SSE transport.
        fixed={"type": "streamableHttp", "disabled": False},
    ),
}


@dataclass(frozen=True)
class ApplyResult:
    path: Path
    changed: bool
    backup: Path | None  # None when nothing changed or there was no file to back up


def _spec(client: str) -> ClientSpec:
    try:
        return CLIENTS[client]
    except KeyError:
        raise ValueError(f"unknown client {client!r}; choose from {', '.join(CLIENTS)}") from None


def _holds_literal_key(spec: ClientSpec, use_env: bool) -> bool:
    return not (use_env and spec.reads_env)


def _entry(spec: ClientSpec, url: str, key: str | None, use_env: bool) -> dict[str, Any]:
    """The sessionvault entry for this client, as it appears under `spec.container`."""
    literal = _holds_literal_key(spec, use_env)
    if literal and not key:
        why = "" if spec.reads_env else f" ({spec.title} cannot read {ENV_VAR} itself)"
        raise ValueError(f"an API key is needed{why}: pass --key or set {ENV_VAR}")
    if spec.url_key is None:
        return {"command": "sessionvault", "args": ["bridge", "--url", url], "env": {ENV_VAR: key}}
    entry: dict[str, Any] = {**spec.fixed, spec.url_key: url}
    if not literal and spec.token_env_key:
        entry[spec.token_env_key] = ENV_VAR
    else:
        token = key if literal else spec.env_ref % ENV_VAR
        entry[spec.headers_key] = {"Authorization": f"Bearer {token}"}
    return entry


def render(client: str, url: str, key: str | None, *, use_env: bool) -> str:
    """The config text a user pastes into the client's file."""
    spec = _spec(client)
    doc = {spec.container: {SERVER_NAME: _entry(spec, url, key, use_env)}}
    if spec.fmt == "toml":
        return tomlkit.dumps(_toml_doc(doc))
    return json.dumps(doc, indent=2) + "\n"


def config_path(client: str, *, home: Path, cwd: Path) -> Path:
    """The client's own config file on this OS (Linux or macOS)."""
    return _spec(client).path(home, cwd)


def apply(
    client: str,
    url: str,
    key: str | None,
    *,
    use_env: bool,
    home: Path,
    cwd: Path,
    now: datetime | None = None,
) -> ApplyResult:
    """Write the sessionvault entry into the client's config file, keeping everything else.

    Idempotent: when the entry is already there, the file is not touched and no backup is
    made. Otherwise the old file is copied to `<file>.bak-YYYYmmddHHMMSS` first.
    """
    spec = _spec(client)
    entry = _entry(spec, url, key, use_env)
    literal = _holds_literal_key(spec, use_env)
    path = config_path(client, home=home, cwd=cwd)
    # Follow a symlinked config (dotfile managers) instead of replacing the link.
    real = path.resolve()
    old = real.read_text(encoding="utf-8") if real.exists() else ""
    load, put = _FORMATS[spec.fmt]

    data = load(old)
    servers = data.get(spec.container, {})
    if not isinstance(servers, dict):
        raise ValueError(f"{path}: {spec.container!r} is not an object; fix it by hand")
    if servers.get(SERVER_NAME) == entry:
        if literal:
            real.chmod(0o600)
        return ApplyResult(path=path, changed=False, backup=None)

    new = put(old, spec.container, entry)
    # The edit is textual (to keep comments), so check that the only change is ours.
    expected = {**data, spec.container: {**servers, SERVER_NAME: entry}}
    if load(new) != expected:
        raise RuntimeError(f"{path}: could not edit the file safely; nothing was written")

    backup = _backup(real, old, now or datetime.now()) if real.exists() else None
    mode = 0o600 if literal else (real.stat().st_mode & 0o777 if real.exists() else 0o644)
    _write_atomic(real, new, mode)
    return ApplyResult(path=path, changed=True, backup=backup)


def _backup(real: Path, text: str, now: datetime) -> Path:
    stem = f"{real.name}.bak-{now:%Y%m%d%H%M%S}"
    backup, n = real.with_name(stem), 1
    while backup.exists():  # two changing applies within one second
        backup, n = real.with_name(f"{stem}-{n}"), n + 1
    # The old file may hold a key: the copy is private whatever the original's mode was.
    _write_atomic(backup, text, 0o600)
    return backup


def _write_atomic(path: Path, text: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- JSON and JSONC ---------------------------------------------------------------------
# Zed, VS Code and OpenCode read JSON with comments and trailing commas. Rather than
# re-serialize (which drops comments and reformats a user's file), the writer splices the
# one entry into the original text; apply() then re-parses the result to prove it.

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
      |(?P<comment>//[^\n]*|/\*.*?\*/)
      |(?P<tok>"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"/]+)""",
    re.S | re.X,
)


@dataclass(frozen=True)
class _Tok:
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class _Member:
    key: str
    key_at: int  # token indexes
    value_at: int
    value_end: int  # one past the value's last token


def _tokens(text: str) -> list[_Tok]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"not JSON: unexpected {text[pos : pos + 20]!r}")
        if m["tok"]:
            out.append(_Tok(m["tok"], m.start(), m.end()))
        pos = m.end()
    return out


def _json_load(text: str) -> dict[str, Any]:
    toks = _tokens(text)
    if not toks:
        return {}
    # Drop trailing commas; comments are already gone.
    kept = [t.text for i, t in enumerate(toks) if not (t.text == "," and _next_closes(toks, i))]
    data = json.loads(" ".join(kept))
    if not isinstance(data, dict):
        raise ValueError("config file is not a JSON object")
    return data


def _next_closes(toks: list[_Tok], i: int) -> bool:
    return i + 1 < len(toks) and toks[i + 1].text in "}]"


def _value_end(toks: list[_Tok], i: int) -> int:
    if toks[i].text not in "{[":
        return i + 1
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text in "{[":
            depth += 1
        elif toks[j].text in "}]":
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError("unbalanced JSON")


def _members(toks: list[_Tok], open_at: int) -> tuple[list[_Member], int]:
    """Members of the object opening at token `open_at`, and the index of its `}`.

    Only called on text that _json_load accepted, so the structure is known to be valid.
    """
    members, j = [], open_at + 1
    while toks[j].text != "}":
        end = _value_end(toks, j + 2)
        members.append(_Member(json.loads(toks[j].text), j, j + 2, end))
        j = end + 1 if toks[end].text == "," else end
    return members, j


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    return re.match(r"[ \t]*", text[start:pos]).group()


def _json_put(text: str, container: str, entry: Any, name: str = SERVER_NAME) -> str:
    toks = _tokens(text)
    if not toks:
        return json.dumps({container: {name: entry}}, indent=2) + "\n"
    root, _ = _members(toks, 0)
    unit = _line_indent(text, toks[root[0].key_at].start) if root else ""
    unit = unit or "  "  # indent unit of the file, taken from its first member
    compact = "\n" not in text.strip()  # a one-line file stays on one line

    def dump(value: Any, indent: str) -> str:
        if compact:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)

    def member(key: str, value: Any, indent: str) -> str:
        lead = " " if compact else "\n" + indent
        return f"{lead}{json.dumps(key)}: {dump(value, indent)}"

    def member_indent(m: _Member, open_at: int) -> str:
        at = toks[m.key_at].start
        before = text[text.rfind("\n", 0, at) + 1 : at]
        # A key alone at the start of its line sets the indent; otherwise nest one unit.
        return before if not before.strip() else _line_indent(text, toks[open_at].start) + unit

    def insert(open_at: int, key: str, value: Any) -> str:
        members, close_at = _members(toks, open_at)
        if not members:
            outer = _line_indent(text, toks[open_at].start)
            new = member(key, value, outer + unit)
            left, right = toks[open_at].end, toks[close_at].start
            if text[left:right].strip():  # keep comments inside an otherwise empty object
                return text[:left] + new + text[left:]
            return text[:left] + new + (" " if compact else "\n" + outer) + text[right:]
        last = members[-1]
        anchor = toks[last.value_end - 1].end
        comma = ","
        if toks[last.value_end].text == ",":  # JSONC trailing comma already there
            anchor, comma = toks[last.value_end].end, ""
        # Insert after a `// comment` that ends the line, so it stays with its member.
        eol = text.find("\n", anchor)
        eol = len(text) if eol < 0 else eol
        rest = text[anchor:eol].strip()
        at = eol if (not rest or rest.startswith("//")) else anchor
        new = member(key, value, member_indent(last, open_at))
        return text[:anchor] + comma + text[anchor:at] + new + text[at:]

    by_key = {m.key: m for m in root}
    if container not in by_key:
        return insert(0, container, {name: entry})
    holder = by_key[container]
    inner, _ = _members(toks, holder.value_at)
    ours = next((m for m in inner if m.key == name), None)
    if ours is None:
        return insert(holder.value_at, name, entry)
    start, end = toks[ours.value_at].start, toks[ours.value_end - 1].end
    return text[:start] + dump(entry, member_indent(ours, holder.value_at)) + text[end:]


# --- TOML (Codex) -----------------------------------------------------------------------


def _toml_load(text: str) -> dict[str, Any]:
    return tomllib.loads(text)


def _toml_table(entry: Mapping[str, Any]) -> tomlkit.items.Table:
    table = tomlkit.table()
    for k, v in entry.items():
        if isinstance(v, Mapping):  # headers read best inline: http_headers = { ... }
            inline = tomlkit.inline_table()
            inline.update(v)
            v = inline
        table[k] = v
    return table


def _toml_doc(doc: Mapping[str, Mapping[str, Any]]) -> tomlkit.TOMLDocument:
    out = tomlkit.document()
    for container, servers in doc.items():
        # A super table prints as [mcp_servers.sessionvault], without an empty [mcp_servers].
        holder = tomlkit.table(is_super_table=True)
        for name, entry in servers.items():
            holder[name] = _toml_table(entry)
        out[container] = holder
    return out


def _toml_put(text: str, container: str, entry: dict[str, Any]) -> str:
    # tomlkit keeps comments, ordering and the other tables of the user's file.
    doc = tomlkit.parse(text)
    if container not in doc:
        doc[container] = tomlkit.table(is_super_table=True)
    table = _toml_table(entry)
    table.add(tomlkit.nl())  # keep a blank line before whatever table follows
    doc[container][SERVER_NAME] = table
    return tomlkit.dumps(doc)


_FORMATS: dict[str, tuple[Callable[[str], dict[str, Any]], Callable[..., str]]] = {
    "json": (_json_load, _json_put),
    "toml": (_toml_load, _toml_put),
}


# --- CLI ----------------------------------------------------------------------------------


def add_connect_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `sessionvault connect <client> [--url] [--key] [--apply] [--no-env]`."""
    p = subparsers.add_parser(
        "connect",
        help="print or write the MCP config that connects a client to SessionVault",
        description="Print the config snippet for CLIENT, or with --apply write it into "
        "the client's own config file (a timestamped backup is kept).",
    )
    p.add_argument("client", choices=list(CLIENTS), metavar="client", help=", ".join(CLIENTS))
    p.add_argument("--url", default=DEFAULT_URL, help=f"server URL (default: {DEFAULT_URL})")
    p.add_argument("--key", default=None, help=f"API key (default: ${ENV_VAR})")
    p.add_argument("--apply", action="store_true", help="write into the client's config file")
    p.add_argument(
        "--no-env",
        dest="use_env",
        action="store_false",
        help=f"write the key itself instead of a reference to ${ENV_VAR}",
    )
    p.add_argument(
        "--hooks",
        action="store_true",
        help="also install the session-start hook (claude-code, codex, gemini); implies --apply",
    )
    p.set_defaults(func=_run_connect)


def _run_connect(args: argparse.Namespace) -> int:
    key = args.key or os.environ.get(ENV_VAR) or None
    spec = CLIENTS[args.client]
    if args.use_env and spec.reads_env and not os.environ.get(ENV_VAR):
        print(
            f"note: set {ENV_VAR} where {spec.title} starts, it reads the key from there",
            file=sys.stderr,
        )
    try:
        if not (args.apply or args.hooks):  # --hooks writes, so it implies --apply
            print(render(args.client, args.url, key, use_env=args.use_env), end="")
            path = config_path(args.client, home=Path.home(), cwd=Path.cwd())
            print(f"# goes into {path}", file=sys.stderr)
            return 0
        result = apply(args.client, args.url, key, use_env=args.use_env, home=Path.home(), cwd=Path.cwd())
    except (ValueError, RuntimeError, OSError) as e:
        print(f"sessionvault connect: {e}", file=sys.stderr)
        return 2
    _report(result)
    if args.hooks:
        from sessionvault import hooks

        try:
            _report(hooks.install_hooks(args.client, home=Path.home(), cwd=Path.cwd(), url=args.url))
        except ValueError as e:
            print(f"sessionvault connect: {e}", file=sys.stderr)
            return 2
    if _holds_literal_key(spec, args.use_env):
        # A project file (Claude Code's .mcp.json) is one `git add .` away from a leak.
        where = " keep it out of git;" if result.path.is_relative_to(Path.cwd()) else ""
        print(f"note:{where} {result.path} holds the API key in plain text (mode 0600)", file=sys.stderr)
    return 0


def _report(result: ApplyResult) -> None:
    print(f"{'updated' if result.changed else 'already up to date'}: {result.path}")
    if result.backup:
        print(f"backup: {result.backup}")
