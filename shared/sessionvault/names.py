"""Names shared by the server, the CLI and every client config: defined here once."""

from __future__ import annotations

SERVER_NAME = "sessionvault"  # the MCP server's name, and its entry in every client config
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}/mcp"
LOCAL_USER = "local"  # the user `make dev` creates

# Environment variables read on a user's machine (clients, hooks, bridge, doctor).
KEY_ENV = "SESSIONVAULT_API_KEY"
HOOK_KEY_ENV = "SESSIONVAULT_HOOK_KEY"  # the hooks' own key (checkpoint scope), over hooks.key
URL_ENV = "SESSIONVAULT_URL"
HOME_ENV = "SESSIONVAULT_HOME"
PORT_ENV = "SESSIONVAULT_PORT"
