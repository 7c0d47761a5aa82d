"""One call's state, shared by the HTTP layer and the MCP handlers of that call: who it is for
(the admitted principal), which tool it runs and how it ended; and whether the caller declared
the MCP Apps extension. Its own module, so that tools and resources both read it and neither
imports the other for it."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from sessionvault.errors import ErrorClass
from sessionvault.service.principal import Principal


@dataclass
class CallState:
    """Per-request facts shared between the HTTP layer and the tool dispatcher."""

    principal: Principal
    tool: str = ""
    error_class: ErrorClass | None = None


current_call: ContextVar[CallState] = ContextVar("sessionvault_call")


def apps_declared(ctx: Any) -> bool:
    """The caller declared the MCP Apps extension (`io.modelcontextprotocol/ui`, with its HTML
    MIME type): in this request's `_meta` envelope (2026-07-28), or in the handshake of a
    connection that kept one. A stateless 2025-era request carries no capabilities: False.
    The SDK's check is imported here, not at init (`app_view.EXTENSION_ID` says why)."""
    from mcp.server.apps import client_supports_apps

    try:
        return client_supports_apps(ctx)
    except AttributeError:  # a context without a session (a direct call, a test)
        return False
