"""`sessionvault bridge`: a stdio MCP server for clients that can only launch local commands
(Claude Desktop). It forwards tools, prompts and resources, unchanged, to a remote SessionVault
server over Streamable HTTP, carrying SESSIONVAULT_API_KEY as a bearer token.

stdout is the protocol: everything else (logs) goes to stderr, and the key is never logged."""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx2
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client, MCPError, types
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR

from sessionvault import __version__
from sessionvault.errors import UpstreamError
from sessionvault.local.remote import rpc
from sessionvault.names import KEY_ENV

log = logging.getLogger("sessionvault.bridge")

MISSING_KEY = (
    f"{KEY_ENV} is not set. Set it to your SessionVault API key in the environment that launches "
    'the bridge (Claude Desktop: "env": {"' + KEY_ENV + '": "sv_live_..."} next to "command"), '
    "then restart the client. Create a key with: sessionvault key create"
)
FALLBACK_INSTRUCTIONS = (
    "SessionVault hands work over between AI clients: save_session before stopping, "
    "load_session (with repo, no name) at the start of work."
)
HTTP_TIMEOUT = httpx2.Timeout(120, connect=10)

T = TypeVar("T")


class Upstream:
    """One MCP client session to the remote server, opened once and reopened on demand if the
    connection is lost. Its task runs in the bridge's task group, so an upstream failure never
    cancels a request handler or the stdio server."""

    def __init__(self, url: str, key: str, tg: TaskGroup) -> None:
        self.url = url
        self.key = key
        self._tg = tg
        self._lock = anyio.Lock()
        self._client: Client | None = None
        self._stop: anyio.Event | None = None
        self._status = 0  # the last HTTP status seen: explains transport-level MCP errors
        self._retry_after = ""

    async def _on_response(self, response: httpx2.Response) -> None:
        self._status = response.status_code
        self._retry_after = response.headers.get("retry-after", "")

    async def _own(self, *, task_status: TaskStatus[Client]) -> None:
        stop = anyio.Event()
        http = httpx2.AsyncClient(
            headers={
                "Authorization": f"Bearer {self.key}",
                "User-Agent": f"sessionvault-bridge/{__version__}",
            },
            timeout=HTTP_TIMEOUT,
            event_hooks={"response": [self._on_response]},
        )
        started = False
        client: Client | None = None
        try:
            async with http:
                transport = streamable_http_client(self.url, http_client=http)
                info = types.Implementation(name="sessionvault-bridge", version=__version__)
                async with Client(transport, cache=None, client_info=info) as client:
                    self._client, self._stop = client, stop
                    started = True
                    task_status.started(client)
                    await stop.wait()
        except Exception as exc:
            if not started:
                raise
            log.warning("connection to %s lost: %s", self.url, _reason(exc))
        finally:
            if client is not None and self._client is client:
                self._client, self._stop = None, None

    async def client(self) -> Client:
        """The live session, connecting first if there is none."""
        if not self.key:
            raise UpstreamError(MISSING_KEY)
        async with self._lock:
            if self._client is None:
                self._status = 0
                try:
                    await self._tg.start(self._own)
                except Exception as exc:
                    leaf = _leaf(exc)
                    code = leaf.code if isinstance(leaf, MCPError) else None
                    raise self._explain(code) or UpstreamError(self._unreachable(_reason(leaf))) from None
                log.info("connected to %s", self.url)
            assert self._client is not None
            return self._client

    def drop(self) -> None:
        """Close the session; the next request reconnects."""
        if self._stop is not None:
            self._stop.set()
        self._client, self._stop = None, None

    async def call(self, fn: Callable[[Client], Awaitable[T]]) -> T:
        """Run one request upstream. Transport failures become UpstreamError with a clear message;
        JSON-RPC errors from the server itself pass through unchanged."""
        client = await self.client()
        self._status = 0
        try:
            return await fn(client)
        except MCPError as exc:
            explained = self._explain(exc.code)
            if explained is not None:
                raise explained from None
            if exc.code == CONNECTION_CLOSED:
                self.drop()
                raise UpstreamError(self._unreachable(exc.message)) from None
            raise
        except (httpx2.HTTPError, OSError) as exc:
            self.drop()
            raise UpstreamError(self._unreachable(_reason(exc))) from None

    def _explain(self, code: int | None) -> UpstreamError | None:
        """Name the HTTP-level cause of an error the transport only reports generically."""
        status = self._status
        if status in (401, 403):
            return UpstreamError(
                f"The SessionVault server at {self.url} rejected the API key (HTTP {status}). "
                f"Check {KEY_ENV}: it must be a valid, unrevoked key for this server "
                "(create one with: sessionvault key create)."
            )
        if status == 429:
            wait = f" Retry in {self._retry_after} s." if self._retry_after else ""
            return UpstreamError(f"Rate limit reached on the SessionVault server.{wait}")
        if status >= 400 and code in (INTERNAL_ERROR, None):
            return UpstreamError(
                f"The SessionVault server at {self.url} answered HTTP {status}; try again later."
            )
        return None

    def _unreachable(self, reason: str) -> str:
        return (
            f"Cannot reach the SessionVault server at {self.url} ({reason}). Is it running, and is "
            "the URL right (--url or SESSIONVAULT_URL)? The bridge retries on the next request."
        )


def _leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (nested) task-group exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _reason(exc: BaseException) -> str:
    exc = _leaf(exc)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def build_bridge_server(upstream: Upstream, instructions: str) -> Server:
    def cursor(params: types.PaginatedRequestParams | None) -> str | None:
        return params.cursor if params is not None else None

    async def forward(fn: Callable[[Client], Awaitable[T]]) -> T:
        try:
            return await upstream.call(fn)
        except UpstreamError as exc:
            raise MCPError(INTERNAL_ERROR, str(exc)) from None

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return await forward(lambda c: c.list_tools(cursor=cursor(params)))

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            return await upstream.call(lambda c: c.call_tool(params.name, params.arguments))
        except UpstreamError as exc:
            return _tool_error(str(exc))

    async def on_list_prompts(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return await forward(lambda c: c.list_prompts(cursor=cursor(params)))

    async def on_get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return await forward(lambda c: c.get_prompt(params.name, params.arguments))

    async def on_list_resources(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return await forward(lambda c: c.list_resources(cursor=cursor(params)))

    async def on_list_resource_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return await forward(lambda c: c.list_resource_templates(cursor=cursor(params)))

    async def on_read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await forward(lambda c: c.read_resource(str(params.uri)))

    return Server(
        "sessionvault",
        version=__version__,
        instructions=instructions,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_prompts=on_list_prompts,
        on_get_prompt=on_get_prompt,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
    )


async def run_bridge(url: str, key: str) -> None:
    async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as tg:
        upstream = Upstream(url, key, tg)
        instructions = FALLBACK_INSTRUCTIONS
        if not key:
            log.warning("%s", MISSING_KEY)
        else:
            try:
                instructions = (await upstream.client()).instructions or FALLBACK_INSTRUCTIONS
            except UpstreamError as exc:
                log.warning("%s", exc)
        server = build_bridge_server(upstream, instructions)
        await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()


def run(url: str, key: str) -> None:
    """Serve stdio until the client closes it; logs go to stderr, never the key."""
    rpc.require_safe_url(url)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="sessionvault bridge: %(levelname)s %(message)s"
    )
    for noisy in ("httpx2", "httpcore", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    log.info("forwarding stdio to %s (API key %s)", url, "set" if key else "NOT set")
    anyio.run(run_bridge, url, key)
