"""Client configs as each client documents them: the expected shapes and file locations.

The expected shapes below are written out by hand from each client's documentation (see
docs/clients.md) rather than derived from `CLIENTS`, so a wrong spec fails here.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

from ..conftest import SV

URL = "http://127.0.0.1:8765/mcp"
KEY = "sv-test-key"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# client -> (top-level key, entry) with the literal key written into the file.
LITERAL: dict[str, tuple[str, dict[str, Any]]] = {
    "claude-code": ("mcpServers", {"type": "http", "url": URL, "headers": bearer(KEY)}),
    "claude-desktop": (
        "mcpServers",
        {"command": SV, "args": ["bridge", "--url", URL], "env": {"SESSIONVAULT_API_KEY": KEY}},
    ),
    "cursor": ("mcpServers", {"url": URL, "headers": bearer(KEY)}),
    "vscode": ("servers", {"type": "http", "url": URL, "headers": bearer(KEY)}),
    "windsurf": ("mcpServers", {"serverUrl": URL, "headers": bearer(KEY)}),
    "codex": ("mcp_servers", {"url": URL, "http_headers": bearer(KEY)}),
    "gemini": ("mcpServers", {"httpUrl": URL, "headers": bearer(KEY)}),
    "opencode": ("mcp", {"type": "remote", "enabled": True, "url": URL, "headers": bearer(KEY)}),
    "zed": ("context_servers", {"url": URL, "headers": bearer(KEY)}),
    "cline": (
        "mcpServers",
        {"type": "streamableHttp", "disabled": False, "url": URL, "headers": bearer(KEY)},
    ),
    "cline-cli": (
        "mcpServers",
        {"type": "streamableHttp", "disabled": False, "url": URL, "headers": bearer(KEY)},
    ),
    "roo-code": ("mcpServers", {"type": "streamable-http", "url": URL, "headers": bearer(KEY)}),
    "kilo-code": ("mcp", {"type": "remote", "enabled": True, "url": URL, "headers": bearer(KEY)}),
    "kiro": ("mcpServers", {"url": URL, "headers": bearer(KEY)}),
    "amazon-q": ("mcpServers", {"type": "http", "url": URL, "headers": bearer(KEY)}),
    "copilot-cli": (
        "mcpServers",
        {"type": "http", "tools": ["*"], "url": URL, "headers": bearer(KEY)},
    ),
    "droid": ("mcpServers", {"type": "http", "url": URL, "headers": bearer(KEY)}),
    "qwen": ("mcpServers", {"httpUrl": URL, "headers": bearer(KEY)}),
    "crush": ("mcp", {"type": "http", "url": URL, "headers": bearer(KEY)}),
    "amp": ("amp.mcpServers", {"url": URL, "headers": bearer(KEY)}),
    "warp": ("mcpServers", {"url": URL, "headers": bearer(KEY)}),
    "junie": (
        "mcpServers",
        {"command": SV, "args": ["bridge", "--url", URL], "env": {"SESSIONVAULT_API_KEY": KEY}},
    ),
}

# Clients that can read SESSIONVAULT_API_KEY themselves, in their own syntax.
ENV_FORM: dict[str, dict[str, Any]] = {
    "claude-code": {"type": "http", "url": URL, "headers": bearer("${SESSIONVAULT_API_KEY}")},
    "cursor": {"url": URL, "headers": bearer("${env:SESSIONVAULT_API_KEY}")},
    "vscode": {"type": "http", "url": URL, "headers": bearer("${env:SESSIONVAULT_API_KEY}")},
    "windsurf": {"serverUrl": URL, "headers": bearer("${env:SESSIONVAULT_API_KEY}")},
    "codex": {"url": URL, "bearer_token_env_var": "SESSIONVAULT_API_KEY"},
    "gemini": {"httpUrl": URL, "headers": bearer("$SESSIONVAULT_API_KEY")},
    "opencode": {
        "type": "remote",
        "url": URL,
        "headers": bearer("{env:SESSIONVAULT_API_KEY}"),
        "enabled": True,
    },
    "kilo-code": {
        "type": "remote",
        "enabled": True,
        "url": URL,
        "headers": bearer("{env:SESSIONVAULT_API_KEY}"),
    },
    "kiro": {"url": URL, "headers": bearer("${SESSIONVAULT_API_KEY}")},
    "qwen": {"httpUrl": URL, "headers": bearer("$SESSIONVAULT_API_KEY")},
    "crush": {"type": "http", "url": URL, "headers": bearer("$SESSIONVAULT_API_KEY")},
}
NO_ENV = sorted(set(LITERAL) - set(ENV_FORM))

LINUX_PATHS = {
    "claude-code": "./.mcp.json",
    "claude-desktop": "~/.config/Claude/claude_desktop_config.json",
    "cursor": "~/.cursor/mcp.json",
    "vscode": "~/.config/Code/User/mcp.json",
    "windsurf": "~/.codeium/windsurf/mcp_config.json",
    "codex": "~/.codex/config.toml",
    "gemini": "~/.gemini/settings.json",
    "opencode": "~/.config/opencode/opencode.json",
    "zed": "~/.config/zed/settings.json",
    "cline": "~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
    "cline-cli": "~/.cline/data/settings/cline_mcp_settings.json",
    "roo-code": "~/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
    "kilo-code": "~/.config/kilo/kilo.jsonc",
    "kiro": "~/.kiro/settings/mcp.json",
    "amazon-q": "~/.aws/amazonq/mcp.json",
    "copilot-cli": "~/.copilot/mcp-config.json",
    "droid": "~/.factory/mcp.json",
    "qwen": "~/.qwen/settings.json",
    "crush": "~/.config/crush/crush.json",
    "amp": "~/.config/amp/settings.json",
    "warp": "~/.warp/.mcp.json",
    "junie": "~/.junie/mcp/mcp.json",
}
MAC_APP = "~/Library/Application Support"
MAC_PATHS = {
    **LINUX_PATHS,
    "claude-desktop": f"{MAC_APP}/Claude/claude_desktop_config.json",
    "vscode": f"{MAC_APP}/Code/User/mcp.json",
    "cline": f"{MAC_APP}/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
    "roo-code": f"{MAC_APP}/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
}


def parse(client: str, text: str) -> dict[str, Any]:
    return tomllib.loads(text) if client == "codex" else json.loads(text)
