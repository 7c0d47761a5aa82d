"""The HTTP API for people and scripts (`/api/v1/...`): the CLI's `sessions`, `export` and
`import`, and the web view, on the same core as the MCP tools. docs/api.md describes it and
docs/openapi.json is its OpenAPI document (the tests hold live answers to it).

Every call is admitted exactly as a tool call is (API key or OAuth token, the same one
statement: tenant, tool rate limit, audit row; the same identical 401), needs the scope its
MCP twin needs (read, write or delete), and runs under RLS. Session names are query
parameters, not path segments: a name may hold slashes (`auto/codex/...`). Errors have one
shape: `{"error": {"code": "...", "message": "..."}}`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import anyio.to_thread
from starlette.types import Receive, Scope, Send

from sessionvault.core import records
from sessionvault.core.apikeys import scope_hint
from sessionvault.errors import (
    BudgetExceeded,
    ErrorClass,
    NotFound,
    Refused,
    ValidationFailed,
    VaultError,
    WorkspaceBusy,
    WorkspaceDenied,
)
from sessionvault.server.edge import read_body, respond
from sessionvault.server.text_checks import json_problem
from sessionvault.service import account_view, portability
from sessionvault.service.principal import Principal
from sessionvault.service.vault import Vault

PREFIX = "/api/v1"
BODY_TYPE = "application/x-ndjson"  # what POST /import takes: an export, as /export gives it
MAX_IMPORT_BYTES = 50_000_000  # an import body; one session line may hold 1 MB x its versions
JSON_HEADERS = {"Cache-Control": "no-store"}
# A core error's HTTP status, by its class (errors.py): "try later" ones are 503s.
STATUS = {"validation": 400, "scope": 403, "quota": 409, "provider": 503, "db": 503, "timeout": 503}


Handler = Callable[[Vault, Principal, dict[str, str]], dict[str, Any]]


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    scope: str  # what the key must allow, as for the MCP tool that does the same
    tool: str  # the name in the audit trail and the log
    # What answers it, off the event loop; None for the export (a stream) and the import (a
    # body), which the Api handles itself. A route with a handler may have its answer held
    # until its admission, riding on its transaction, decides (admission/riding.py): one flight.
    run: Handler | None = None

    @property
    def holdable(self) -> bool:
        return self.run is not None


def route_of(method: str, path: str) -> Route | None:
    """The route for an /api/v1 path (without the prefix), or None."""
    return ROUTES.get((method, path))


def unrouted(path: str) -> Refused:
    """The answer to a path no route serves: 405 with `Allow` when another method would do, else 404."""
    allowed = [method for method, p in ROUTES if p == path]
    if allowed:
        return Refused(
            405, error_body("method", "method not allowed"), "validation", {"Allow": ", ".join(allowed)}
        )
    return Refused(404, error_body("not_found", "no such API path"), "validation")


def error_body(code: str, message: str, extra: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, **(extra or {})}}).encode()


def refusal(status: int, code: str, message: str) -> Refused:
    return Refused(status, error_body(code, message), "validation", JSON_HEADERS)


class Api:
    def __init__(self, vault: Vault, limits: tuple[int, int] | None = None) -> None:
        self.vault = vault
        self.limits = limits  # the tool budget (per minute, per day) an import is taken from

    async def handle(
        self, route: Route, who: Principal, scope: Scope, receive: Receive, send: Send
    ) -> ErrorClass | None:
        """Answer one admitted call; returns the error class for the log (None when it succeeded)."""
        query = _query(scope)
        if route.scope not in who.scopes:
            hint = scope_hint(route.scope, route.tool, who.scopes, query.get("workspace", ""))
            await respond(send, 403, error_body("scope", hint))
            return "scope"
        try:
            if route.path == "/export":  # access is checked before its first byte (export_lines)
                workspace = query.get("workspace", "")
                lines = await anyio.to_thread.run_sync(portability.export_lines, self.vault, who, workspace)
                await self._export(send, lines)
                return None
            if route.path == "/import":
                body = await read_body(receive, MAX_IMPORT_BYTES)
                out = await anyio.to_thread.run_sync(self._import, who, body, query)
            else:
                assert route.run is not None  # every other route has its handler
                out = await anyio.to_thread.run_sync(route.run, self.vault, who, query)
        except BudgetExceeded as exc:  # an import larger than what the limit allows now: no work done
            extra = {"fits_now": exc.fits_now, "per_minute": exc.per_minute}
            body = error_body(exc.error_class, str(exc), extra)
            await respond(send, 429, body, {**JSON_HEADERS, "Retry-After": str(exc.retry_after_s)})
            return exc.error_class
        except WorkspaceBusy as exc:  # the workspace's own budget, not the caller's: said so
            body = error_body(exc.error_class, str(exc), {"window": exc.window, "limit": exc.limit})
            await respond(send, 429, body, {**JSON_HEADERS, "Retry-After": str(exc.retry_after_s)})
            return exc.error_class
        except VaultError as exc:
            status = _status(exc)
            await respond(send, status, error_body(exc.error_class, str(exc)), JSON_HEADERS)
            return exc.error_class
        await respond(send, 200, json.dumps(out, ensure_ascii=False).encode(), JSON_HEADERS)
        return None

    def _import(self, who: Principal, body: bytes, query: dict[str, str]) -> dict[str, Any]:
        lines = [_json_line(n, line) for n, line in enumerate(body.splitlines(), start=1) if line.strip()]
        portability.check_request(lines)
        dry_run = query.get("dry_run") in ("1", "true")
        done = portability.import_lines(
            self.vault, who, lines, dry_run=dry_run, workspace=query.get("workspace", ""), limits=self.limits
        )
        return done.as_dict()

    async def _export(self, send: Send, lines: Iterator[dict[str, Any]]) -> None:
        """NDJSON, streamed one session at a time (a Lambda buffers it whole: fine below its
        6 MB response cap; past that, export from the laptop side against the database)."""
        headers = [
            (b"content-type", b"application/x-ndjson"),
            (b"cache-control", b"no-store"),
            (b"content-disposition", b'attachment; filename="sessionvault-export.ndjson"'),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        async for line in _lines(lines):
            await send({"type": "http.response.body", "body": line, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _lines(lines: Iterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    """Each export line as bytes, produced off the event loop (each one is database work)."""
    done = object()
    while (line := await anyio.to_thread.run_sync(next, lines, done)) is not done:
        yield json.dumps(line, ensure_ascii=False).encode() + b"\n"


def _json_line(number: int, line: bytes) -> Any:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        raise ValidationFailed(f"invalid arguments: line {number} is not JSON") from None
    if found := json_problem(value):  # NUL, a lone surrogate: text the database cannot hold
        raise ValidationFailed(f"invalid arguments: line {number}: {found[0]} in {found[1]}")
    return value


def _query(scope: Scope) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    return {k: v[-1] for k, v in parse_qs(raw, keep_blank_values=True).items()}


def _int(query: dict[str, str], name: str, default: int) -> int:
    raw = query.get(name, "")
    if not raw:
        return default
    if not raw.isdigit():
        raise ValidationFailed(f"invalid arguments: {name}: must be a whole number")
    return int(raw)


def _list(vault: Vault, who: Principal, q: dict[str, str]) -> dict[str, Any]:
    args = {"repo": q.get("repo", ""), "limit": _int(q, "limit", 20), "cursor": q.get("cursor", "")}
    return vault.list(who, records.parse(records.ListArgs, {**args, **_space(q)}))


def _get(vault: Vault, who: Principal, q: dict[str, str]) -> dict[str, Any]:
    args = {"name": _name(q), "version": _int(q, "version", 0), "mode": q.get("mode", "normal")}
    out = vault.load(who, records.parse(records.LoadArgs, {**args, **_space(q)}))
    if not out.get("found"):
        raise NotFound(out.get("hint", "not found"))
    return out


def _versions(vault: Vault, who: Principal, q: dict[str, str]) -> dict[str, Any]:
    name = _name(q)
    lines = portability.export_session(vault, who, name)
    if not lines["versions"]:
        raise NotFound(f"no session named {name!r}")
    return lines


def _delete(vault: Vault, who: Principal, q: dict[str, str]) -> dict[str, Any]:
    out = vault.delete(who, records.parse(records.DeleteArgs, {"name": _name(q), **_space(q)}))
    if not out.get("deleted"):
        raise NotFound(out.get("hint", "not found"))
    return out


def _search(vault: Vault, who: Principal, q: dict[str, str]) -> dict[str, Any]:
    args = {"query": q.get("q", ""), "repo": q.get("repo", ""), "max_results": _int(q, "limit", 5)}
    return vault.search(who, records.parse(records.SearchArgs, {**args, **_space(q)}))


def _handoffs(vault: Vault, who: Principal, q: dict[str, str]) -> dict[str, Any]:
    repo = records.parse(records.ListArgs, {"repo": q.get("repo", "")}).repo
    limit = min(_int(q, "limit", 50), 200)
    return {"handoffs": account_view.offers(vault.db, who, repo, q.get("state", ""), limit)}


def _status(exc: VaultError) -> int:
    """A refusal's status: 404 for what is not the caller's (a workspace they are not in reads as
    one that does not exist), 403 for a role that does not allow it, else by its class."""
    if isinstance(exc, NotFound) or (isinstance(exc, WorkspaceDenied) and exc.role is None):
        return 404
    return 403 if isinstance(exc, WorkspaceDenied) else STATUS.get(exc.error_class, 400)


def _space(q: dict[str, str]) -> dict[str, str]:
    """The `workspace` a route names (docs/teams.md); absent: the caller's personal space."""
    return {"workspace": q["workspace"]} if q.get("workspace") else {}


def _name(q: dict[str, str]) -> str:
    name = q.get("name", "")
    if not name:
        raise ValidationFailed("invalid arguments: name: give the session's name")
    return name


# The one route table: method and path -> what the key must allow, the audit name, the handler.
ROUTES = {
    (r.method, r.path): r
    for r in (
        Route("GET", "/sessions", "read", "api/sessions.list", _list),
        Route("GET", "/session", "read", "api/session.get", _get),
        Route("GET", "/session/versions", "read", "api/session.versions", _versions),
        Route("DELETE", "/session", "delete", "api/session.delete", _delete),
        Route("GET", "/search", "read", "api/search", _search),
        Route("GET", "/handoffs", "read", "api/handoffs.list", _handoffs),
        Route("GET", "/export", "read", "api/export"),
        Route("POST", "/import", "write", "api/import"),
    )
}
PATHS = frozenset(path for _, path in ROUTES)
