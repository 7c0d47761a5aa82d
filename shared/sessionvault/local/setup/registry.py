"""Connect MCP clients to a SessionVault server: config snippets and safe in-place edits.

Every client gets the same server (Streamable HTTP at `url`, `Authorization: Bearer <key>`),
but each spells it differently. `CLIENTS` holds those differences as data; the code below
builds one entry from a spec; `files` writes it with one of two formats (`jsonc`, `toml`).
Sources for each shape are listed in docs/clients.md.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sessionvault.errors import ConfigFileError
from sessionvault.local.hook import repo
from sessionvault.local.host import command
from sessionvault.local.setup import toml
from sessionvault.names import KEY_ENV, SERVER_NAME


def _app_config(home: Path) -> Path:
    """Where Electron apps (Claude Desktop, VS Code) keep per-user config on this OS."""
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    return home / ".config"


def project_root(cwd: Path) -> Path:
    """The repository that `cwd` is in (its git top level), else `cwd` itself. Claude Code
    reads `.mcp.json` from the folder it starts in and its parents, so the repo root is the
    one place that every `claude` started inside the repo finds."""
    top = repo._git(cwd, "rev-parse", "--show-toplevel")
    return Path(top) if top else cwd


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
    project_scoped: bool = False  # the file lives in the repository, not in the home folder

    @property
    def reads_env(self) -> bool:
        return self.env_ref is not None or self.token_env_key is not None


CLIENTS: dict[str, ClientSpec] = {
    "claude-code": ClientSpec(
        title="Claude Code",
        # Project scope: the only scope where ${VAR} expansion is documented.
        path=lambda home, cwd: project_root(cwd) / ".mcp.json",
        container="mcpServers",
        fixed={"type": "http"},
        env_ref="${%s}",
        project_scoped=True,
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
    "cline-cli": ClientSpec(
        title="Cline CLI",
        # The `cline` command's own settings (3.x; `cline mcp add` writes this file), not the
        # VS Code extension's: the same flat entry as the extension's.
        path=lambda home, cwd: home / ".cline" / "data" / "settings" / "cline_mcp_settings.json",
        container="mcpServers",
        fixed={"type": "streamableHttp", "disabled": False},
    ),
    "roo-code": ClientSpec(
        title="Roo Code (VS Code extension)",
        path=lambda home, cwd: (
            _app_config(home)
            / "Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json"
        ),
        container="mcpServers",
        # Roo, like Cline, needs the type spelled out for a Streamable HTTP `url`.
        fixed={"type": "streamable-http"},
    ),
    "kilo-code": ClientSpec(
        title="Kilo Code",
        # Kilo's own config (shared by its VS Code extension and CLI), not VS Code's storage.
        path=lambda home, cwd: home / ".config" / "kilo" / "kilo.jsonc",
        container="mcp",
        fixed={"type": "remote", "enabled": True},
        env_ref="{env:%s}",
    ),
    "kiro": ClientSpec(
        title="Kiro (IDE and CLI)",
        path=lambda home, cwd: home / ".kiro" / "settings" / "mcp.json",
        container="mcpServers",
        env_ref="${%s}",
    ),
    "amazon-q": ClientSpec(
        title="Amazon Q Developer CLI",
        path=lambda home, cwd: home / ".aws" / "amazonq" / "mcp.json",
        container="mcpServers",
        fixed={"type": "http"},
    ),
    "copilot-cli": ClientSpec(
        title="GitHub Copilot CLI",
        path=lambda home, cwd: home / ".copilot" / "mcp-config.json",
        container="mcpServers",
        # `tools` is required by Copilot's format; "*" enables every tool of the server.
        fixed={"type": "http", "tools": ["*"]},
    ),
    "droid": ClientSpec(
        title="Factory Droid",
        # User-level MCP servers of the Droid CLI (https://docs.factory.ai/cli/configuration/mcp).
        path=lambda home, cwd: home / ".factory" / "mcp.json",
        container="mcpServers",
        fixed={"type": "http"},
    ),
    "qwen": ClientSpec(
        title="Qwen Code",
        path=lambda home, cwd: home / ".qwen" / "settings.json",
        container="mcpServers",
        url_key="httpUrl",  # as in Gemini CLI, which it forks: `url` would mean SSE
        env_ref="$%s",
    ),
    "crush": ClientSpec(
        title="Crush",
        path=lambda home, cwd: home / ".config" / "crush" / "crush.json",
        container="mcp",
        fixed={"type": "http"},
        env_ref="$%s",
    ),
    "amp": ClientSpec(
        title="Amp",
        path=lambda home, cwd: home / ".config" / "amp" / "settings.json",
        container="amp.mcpServers",  # one flat, dotted key, like VS Code settings
    ),
    "warp": ClientSpec(
        title="Warp",
        path=lambda home, cwd: home / ".warp" / ".mcp.json",
        container="mcpServers",
    ),
    "junie": ClientSpec(
        title="JetBrains Junie",
        path=lambda home, cwd: home / ".junie" / "mcp" / "mcp.json",
        container="mcpServers",
        url_key=None,  # Junie in the IDE starts stdio servers only
    ),
}


def client_spec(client: str) -> ClientSpec:
    try:
        return CLIENTS[client]
    except KeyError:
        raise ConfigFileError(f"unknown client {client!r}; choose from {', '.join(CLIENTS)}") from None


def holds_literal_key(spec: ClientSpec, use_env: bool) -> bool:
    return not (use_env and spec.reads_env)


def entry(spec: ClientSpec, url: str, key: str | None, use_env: bool) -> dict[str, Any]:
    """The sessionvault entry for this client, as it appears under `spec.container`."""
    literal = holds_literal_key(spec, use_env)
    if literal and not key:
        why = "" if spec.reads_env else f" ({spec.title} cannot read {KEY_ENV} itself)"
        raise ConfigFileError(f"an API key is needed{why}: pass --key or set {KEY_ENV}")
    if spec.url_key is None:
        # By absolute path: Claude Desktop starts servers with a minimal PATH (other IDEs may too).
        program, *prefix = command.sessionvault_argv()
        return {"command": program, "args": [*prefix, "bridge", "--url", url], "env": {KEY_ENV: key}}
    out: dict[str, Any] = {**spec.fixed, spec.url_key: url}
    if not literal and spec.token_env_key:
        out[spec.token_env_key] = KEY_ENV
    else:
        token = key if literal else (spec.env_ref or "%s") % KEY_ENV
        out[spec.headers_key] = {"Authorization": f"Bearer {token}"}
    return out


def render(client: str, url: str, key: str | None, *, use_env: bool) -> str:
    """The config text a user pastes into the client's file."""
    spec = client_spec(client)
    doc = {spec.container: {SERVER_NAME: entry(spec, url, key, use_env)}}
    if spec.fmt == "toml":
        return toml.dumps(doc)
    return json.dumps(doc, indent=2) + "\n"


def config_path(client: str, *, home: Path, cwd: Path) -> Path:
    """The client's own config file on this OS (Linux or macOS)."""
    return client_spec(client).path(home, cwd)


def quickstart(url: str, key: str | None) -> str:
    """What `make dev` prints: the two most common clients, and where to find the rest."""
    shown = key or f"${{{KEY_ENV}}}"  # a shell expands it when the line runs
    # Cursor's own file, as `connect cursor` writes it: with no key to show, the reference Cursor
    # expands (`${env:NAME}`; a bare `${NAME}` reaches the server as those very characters).
    spec = client_spec("cursor")
    cursor = {spec.container: {SERVER_NAME: entry(spec, url, key, use_env=key is None)}}
    return "\n".join(
        [
            "Connect your AI clients:",
            "",
            "  Claude Code:",
            f"    claude mcp add --transport http {SERVER_NAME} {url} \\",
            f'      --header "Authorization: Bearer {shown}"',
            "",
            "  Cursor (~/.cursor/mcp.json):",
            *("    " + line for line in json.dumps(cursor, indent=2).splitlines()),
            "",
            "  Other clients: sessionvault connect --help",
        ]
    )
