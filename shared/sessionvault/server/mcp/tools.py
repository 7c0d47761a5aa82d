"""The MCP tools: compact hand-checked schemas from the pydantic models, one dispatcher, and each
tool's scope (what the API key must allow)."""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import anyio.to_thread
import psycopg
import psycopg.errors
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

import sessionvault
from sessionvault.core import framing, records
from sessionvault.core.apikeys import scope_hint
from sessionvault.errors import NotAdmitted, VaultError
from sessionvault.server.mcp import app_view, prompts, resources
from sessionvault.server.mcp.call_state import current_call
from sessionvault.server.mcp.schema import compact_schema
from sessionvault.service import purge
from sessionvault.service.principal import Principal
from sessionvault.service.vault import Vault

log = logging.getLogger(__name__)

INSTRUCTIONS = """SessionVault hands work over between AI clients.
- At the start of work in a repo, call load_session with repo (no name) to see the last handoff;
  load_session with repo, accept=true and client claims an open handoff (once, for one client).
- Before stopping, switching tools, or when asked to hand off, call save_session: summary, plan,
  decisions with reasons, files, errors, what was tried, next steps (todos). Reuse the name to
  add a version; earlier versions stay loadable.
- search_sessions finds past sessions by meaning; list_sessions lists names."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args: type[records.Strict]
    run: Callable[[Vault, Principal, Any], dict[str, Any]]
    scope: str  # what the API key must allow: read, write, delete, or the hooks' checkpoint
    annotations: types.ToolAnnotations
    quotes_notes: bool = False  # the result carries saved text: framed as data for the model
    listed: bool = True  # shown in tools/list; False: called by our own code only (the hooks)

    def definition(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=compact_schema(self.args),
            annotations=self.annotations,
        )


# Every tool works on this server's own data only: never open-world.
READ_ONLY = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)

TOOLS = [
    ToolSpec(
        "save_session",
        "Save the current work session so another AI client can continue it. "
        "Same name = new version; earlier versions are kept. handoff=true offers it to the next "
        "client (or to_client only). Returns name, version, saved_at.",
        records.SaveArgs,
        Vault.save,
        "write",
        types.ToolAnnotations(destructive_hint=False, idempotent_hint=False, open_world_hint=False),
    ),
    ToolSpec(
        "checkpoint_session",
        "Save an automatic checkpoint (auto/... names): the capture hooks' own call, built from a"
        " client's transcript without a model. Not listed, and it needs the hooks' own scope: a"
        " session is automatic because this path saved it, never because of a name a caller chose"
        " (save_session refuses auto/ names), and a model-facing key cannot prune checkpoints.",
        records.SaveArgs,
        lambda vault, who, args: vault.save(who, args, checkpoint=True),
        "checkpoint",
        types.ToolAnnotations(destructive_hint=False, idempotent_hint=False, open_world_hint=False),
        listed=False,
    ),
    ToolSpec(
        "load_session",
        "Load a session exactly: by name, or with no name the latest one for repo. "
        "accept=true claims the repo's open handoff (exactly once). Never guesses: found=false if absent.",
        records.LoadArgs,
        Vault.load,
        "read",
        READ_ONLY,
        quotes_notes=True,
    ),
    ToolSpec(
        "search_sessions",
        "Find saved sessions by meaning and by the words, identifiers, paths or error codes they name,"
        " best first; each hit says why it matched (meaning, keyword or both).",
        records.SearchArgs,
        Vault.search,
        "read",
        READ_ONLY,
        quotes_notes=True,
    ),
    ToolSpec(
        "list_sessions",
        "List saved sessions, newest first, with a short preview. Without a workspace, the first"
        " page also names the workspaces you belong to and your role in each (pass one as"
        " workspace to list, load, search or save there).",
        records.ListArgs,
        Vault.list,
        "read",
        READ_ONLY,
        quotes_notes=True,
    ),
    ToolSpec(
        "delete_session",
        "Delete a session and all its versions. Cannot be undone.",
        records.DeleteArgs,
        Vault.delete,
        "delete",
        types.ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False),
    ),
    ToolSpec(
        "delete_all_sessions",
        "Delete every session (or one repo's) in two steps: the first call only counts and returns "
        "a confirm_token; a second call with it and confirm_phrase 'I CONFIRM DELETE ALL' deletes.",
        records.DeleteAllArgs,
        purge.delete_all,
        "delete",
        types.ToolAnnotations(destructive_hint=True, idempotent_hint=False, open_world_hint=False),
    ),
]
_BY_NAME = {spec.name: spec for spec in TOOLS}
LISTED = [spec for spec in TOOLS if spec.listed]
TOOL_NAMES = frozenset(_BY_NAME)


def scope_of(name: str, arguments: Any = None) -> str | None:
    """Every scope a call of the tool `name` with `arguments` needs, comma-separated (None: no
    such tool): its own, and write for a load that claims a handoff (accept=true). A riding
    admission checks them all in its statement (migration 0014)."""
    spec = _BY_NAME.get(name)
    if spec is None:
        return None
    claims = name == "load_session" and isinstance(arguments, dict) and arguments.get("accept") is True
    return f"{spec.scope},write" if claims and spec.scope != "write" else spec.scope


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


async def call_tool(vault: Vault, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
    state = current_call.get()
    state.tool = name
    spec = _BY_NAME.get(name)
    if spec is None:  # a protocol error, not a result the model reads (MCP tools, error handling)
        state.error_class = "validation"
        listed = ", ".join(spec.name for spec in LISTED)  # a hidden tool is never named
        raise MCPError(resources.INVALID_PARAMS, f"unknown tool {name!r}; available: {listed}")
    if spec.scope not in state.principal.scopes:
        state.error_class = "scope"
        named = (arguments or {}).get("workspace")
        space = named if isinstance(named, str) else ""
        return _error(scope_hint(spec.scope, name, state.principal.scopes, space))
    try:
        args = records.parse(spec.args, arguments)
        result = await anyio.to_thread.run_sync(partial(spec.run, vault, state.principal, args))
    except VaultError as exc:
        state.error_class = exc.error_class
        return _error(str(exc))
    except NotAdmitted:  # the server answers from the admission instead (server/admission/admitter.py)
        state.error_class = "auth"
        return _error("not admitted")
    except psycopg.errors.QueryCanceled:
        state.error_class = "timeout"
        return _error("the request took too long and was cancelled; try again")
    except psycopg.Error as exc:
        state.error_class = "db"
        log.error("database error in tool", extra={"tool": name, "error_type": type(exc).__name__})
        return _error("the database could not complete this request; try again")
    except Exception as exc:  # a bug: record where, never the message (it may hold the caller's data)
        state.error_class = "internal"
        frames = "".join(traceback.format_tb(exc.__traceback__))
        log.error("tool failed", extra={"tool": name, "error_type": type(exc).__name__, "frames": frames})
        return _error("internal error")
    # Saved text reaches the model framed as notes, not instructions (framing.frame_json).
    text = framing.frame_json(result) if spec.quotes_notes else json.dumps(result, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=result
    )


# The MCP App (`server/mcp/app_view.py`): these tools' definitions and results link the handoff
# view through `_meta.ui.resourceUri`, for every host. The hosts that render Apps mostly speak
# 2025-11-25 and declare the extension in `initialize`, which this stateless server never sees,
# so a link gated on the declaration would never reach them. The ext-apps specification (SEP-1865,
# 2026-01-26, "Resource Discovery") lets it ride everywhere: a host that does not support MCP Apps
# treats such a tool as a standard tool, and `_meta` is not model context. The content stays the
# full text answer (its text-only fallback); resources/list still shows the App only to a host
# that declares it (the spec lets a server omit UI-only resources), so @-mention lists are as
# they were.
UI_TOOLS = frozenset({"load_session", "list_sessions"})


def ui_meta() -> dict[str, Any]:
    """The `_meta` entry that links the handoff view (a fresh dict: results do not share it)."""
    return {"ui": {"resourceUri": app_view.URI}}


@cache
def definitions() -> tuple[types.Tool, ...]:
    """Built once per process: the SDK asks for them on every tools/list (and, on the
    2026-07-28 protocol, to check each tools/call's parameters). The UI tools carry the link."""
    return tuple(
        spec.definition().model_copy(update={"meta": ui_meta()})
        if spec.name in UI_TOOLS
        else spec.definition()
        for spec in LISTED
    )


def build_server(vault: Vault) -> Server:
    schemas = {spec.name: spec.definition().input_schema for spec in TOOLS}  # listed or not

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        allowed = current_call.get().principal.scopes  # only the tools this key may call
        return types.ListToolsResult(
            tools=[t for t, s in zip(definitions(), LISTED, strict=True) if s.scope in allowed]
        )

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await call_tool(vault, params.name, params.arguments)
        if params.name in UI_TOOLS and not result.is_error:
            result.meta = {**(result.meta or {}), **ui_meta()}
        return result

    server = Server(
        "sessionvault",
        version=sessionvault.__version__,
        instructions=INSTRUCTIONS,
        get_tool_input_schema=schemas.get,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_prompts=prompts.on_list_prompts,
        on_get_prompt=prompts.on_get_prompt,
        **resources.build(vault),
    )
    server.extensions[app_view.EXTENSION_ID] = {}  # advertised (SEP-2133); the tools link the App for all
    return server
