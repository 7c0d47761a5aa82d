"""Sessions as MCP resources, so clients with @-mentions can attach one to a conversation:
resources/list (the most recent sessions), the template `sessionvault://sessions/{name}`, and
resources/read (the session as load_session returns it, framed as notes). Also the handoff view
of the MCP Apps extension (`server/mcp/app_view.py`): read by its `ui://` URI, and listed for
hosts that declare the extension (for every other host resources/list is as it was).

Same rules as the tools: the tenant comes only from the API key (the CallState the HTTP layer
set), reading needs the `read` scope, and the request is audited under its method's name."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

import anyio.to_thread
import psycopg
from mcp import types
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from sessionvault.core import framing, records
from sessionvault.errors import VaultError
from sessionvault.server.mcp import app_view
from sessionvault.server.mcp.call_state import apps_declared, current_call
from sessionvault.service.principal import Principal
from sessionvault.service.vault import Vault

SCHEME = "sessionvault://sessions/"
TEMPLATE = SCHEME + "{name}"
LISTED = 50  # resources/list shows the most recent sessions
MIME = "text/plain"  # JSON inside a notes frame (framing.frame_json), not bare JSON

INVALID_PARAMS = -32602
# "Resource not found": -32002 up to the 2025-11-25 protocol; from 2026-07-28 (SEP-2164) invalid
# params, -32602. Either way the error's data names the URI.
NOT_FOUND_LEGACY = -32002
INTERNAL = -32603


def uri_for(name: str) -> str:
    return SCHEME + quote(name, safe="")


def name_of(uri: str) -> str:
    """The session name in a resource URI; MCPError if it is not one of ours."""
    if not uri.startswith(SCHEME) or len(uri) == len(SCHEME):
        raise MCPError(INVALID_PARAMS, f"unknown resource; session URIs look like {TEMPLATE}")
    return unquote(uri[len(SCHEME) :])


def _reader(method: str) -> Principal | None:
    """The caller, if its key may read; records the method for the audit."""
    state = current_call.get()
    state.tool = method
    if "read" not in state.principal.scopes:
        state.error_class = "scope"
        return None
    return state.principal


async def _run(method: str, fn: Any, *args: Any) -> Any:
    """`fn(*args)` off the event loop; failures as MCP errors that never echo saved data."""
    state = current_call.get()
    try:
        return await anyio.to_thread.run_sync(fn, *args)
    except VaultError as exc:
        state.error_class = exc.error_class
        raise MCPError(INVALID_PARAMS, str(exc)) from None
    except psycopg.errors.QueryCanceled:
        state.error_class = "timeout"
        raise MCPError(INTERNAL, "the request took too long and was cancelled; try again") from None
    except psycopg.Error:
        state.error_class = "db"
        raise MCPError(INTERNAL, "the database could not complete this request; try again") from None


def _app_resource() -> types.Resource:
    return types.Resource(
        uri=app_view.URI,
        name=app_view.NAME,
        description=app_view.DESCRIPTION,
        mime_type=app_view.MIME,
        _meta=app_view.resource_meta(),
    )


def build(vault: Vault) -> dict[str, Any]:
    """The handlers, as keyword arguments for the SDK's lowlevel Server."""

    async def on_list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        who = _reader("resources/list")
        if who is None:  # as tools/list: show only what this key may use
            return types.ListResourcesResult(resources=[])
        listing = await _run("resources/list", vault.list, who, records.ListArgs(limit=LISTED))
        resources = [
            types.Resource(
                uri=uri_for(entry["name"]),
                name=entry["name"],
                description=framing.flatten(entry["preview"], records.PREVIEW_CHARS) or None,
                mime_type=MIME,
            )
            for entry in listing["sessions"]
        ]
        if apps_declared(ctx):
            resources.append(_app_resource())
        return types.ListResourcesResult(resources=resources)

    async def on_list_resource_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        if _reader("resources/templates/list") is None:
            return types.ListResourceTemplatesResult(resource_templates=[])
        template = types.ResourceTemplate(
            name="session",
            uri_template=TEMPLATE,
            description="A saved SessionVault session by name (its latest version)",
            mime_type=MIME,
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def on_read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        who = _reader("resources/read")
        if who is None:
            raise MCPError(INVALID_PARAMS, "this API key lacks the 'read' scope that resources/read needs")
        uri = str(params.uri)
        if uri == app_view.URI:  # static HTML, no saved data: the same for every caller
            app = types.TextResourceContents(
                uri=uri, mime_type=app_view.MIME, text=app_view.HTML, _meta=app_view.resource_meta()
            )
            return types.ReadResourceResult(contents=[app])
        modern = getattr(ctx, "protocol_version", "") in MODERN_PROTOCOL_VERSIONS
        not_found = INVALID_PARAMS if modern else NOT_FOUND_LEGACY
        try:
            args = records.parse(records.LoadArgs, {"name": name_of(uri)})
        except VaultError as exc:
            current_call.get().error_class = exc.error_class
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        except MCPError as exc:  # not one of ours: not found either, and it says which URI
            current_call.get().error_class = "validation"
            raise MCPError(not_found, exc.error.message, {"uri": uri}) from None
        result = await _run("resources/read", vault.load, who, args)
        if not result.get("found"):
            raise MCPError(not_found, "resource not found: no session by that name", {"uri": uri})
        text = framing.frame_json(result)
        contents = types.TextResourceContents(uri=uri, mime_type=MIME, text=text)
        return types.ReadResourceResult(contents=[contents])

    return {
        "on_list_resources": on_list_resources,
        "on_list_resource_templates": on_list_resource_templates,
        "on_read_resource": on_read_resource,
    }
