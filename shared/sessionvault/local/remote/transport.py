"""The HTTP under the API client (`api_client`): where the API is (`Api`), one call and its
JSON answer, a stream opened for reading, and every refusal raised as the project's own error
(errors.py) with the server's message: 400/404 `ValidationFailed`, 403 `ScopeMissing`, 409
`QuotaExceeded`, a 503 for the embedding provider `ProviderUnavailable`, a 401 `ConfigError`
(the key is this machine's configuration), 429 `RateLimited`, and what cannot be reached or
answered `Unavailable` / `UpstreamError`. The standard library only (as `rpc.py`: no httpx on a
command's start), with `rpc.require_safe_url`'s rule: the key goes over https, or plain http to
this machine only."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from http.client import HTTPConnection, HTTPException, HTTPResponse, HTTPSConnection
from typing import Any
from urllib.parse import urlencode, urlsplit

from sessionvault import __version__
from sessionvault.errors import (
    ConfigError,
    ProviderUnavailable,
    QuotaExceeded,
    RateLimited,
    ScopeMissing,
    SessionVaultError,
    Unavailable,
    UpstreamError,
    ValidationFailed,
)
from sessionvault.local.remote.rpc import LOOPBACK, require_safe_url
from sessionvault.names import KEY_ENV

PREFIX = "/api/v1"
NDJSON = "application/x-ndjson"
TIMEOUT_S = 30.0  # each socket operation of a call
IMPORT_TIMEOUT_S = 120.0  # an import batch: every version in it is embedded and saved
MAX_ANSWER = 64_000_000  # a JSON answer: a session's versions may hold 1 MB each
MAX_LINE = 256_000_000  # one line of an export: a session with every kept version


@dataclass(frozen=True)
class Api:
    """Where the API is (`root`: scheme, host, port and the path before /api/v1) and the key."""

    root: str
    key: str = field(repr=False)

    @classmethod
    def at(cls, url: str, key: str) -> Api:
        """The API of the server whose MCP URL (or bare base URL) is `url`."""
        if not key.strip():
            raise ConfigError(f"no API key: give --key, or set {KEY_ENV} (see `sessionvault doctor`)")
        return cls(api_root(url), key.strip())

    @property
    def local(self) -> bool:
        return urlsplit(self.root).hostname in LOOPBACK


def api_root(url: str) -> str:
    """`http://127.0.0.1:8765/mcp` -> `http://127.0.0.1:8765`: the /mcp URL every command takes
    (and `connect` writes) names the server; /api/v1 is beside it. A base URL, or one that
    already ends in /api/v1, is taken as well."""
    require_safe_url(url)
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    for suffix in ("/mcp", PREFIX):
        path = path.removesuffix(suffix)
    return f"{parts.scheme}://{parts.netloc}{path}"


def call_json(
    api: Api,
    method: str,
    path: str,
    query: dict[str, Any],
    *,
    body: bytes | None = None,
    content_type: str = "",
    timeout: float = TIMEOUT_S,
) -> dict[str, Any]:
    conn, response = open_call(
        api, method, path, query, body=body, content_type=content_type, timeout=timeout
    )
    try:
        raw = read_answer(response)
    finally:
        conn.close()
    if response.status != 200:
        raise failure(api, response.status, raw, response)
    try:
        out = json.loads(raw)
    except ValueError:
        out = None
    if not isinstance(out, dict):
        raise UpstreamError(f"{api.root} answered {path} with something that is not a JSON object")
    return out


def open_call(
    api: Api,
    method: str,
    path: str,
    query: dict[str, Any],
    *,
    body: bytes | None = None,
    content_type: str = "",
    timeout: float,
) -> tuple[HTTPConnection, HTTPResponse]:
    parts = urlsplit(api.root)
    host = require_safe_url(api.root)
    conn_class = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    conn = conn_class(host, parts.port, timeout=timeout)
    sent = {k: str(v) for k, v in query.items() if v not in ("", 0, None)}
    target = f"{parts.path}{PREFIX}{path}" + (f"?{urlencode(sent)}" if sent else "")
    headers = {
        "Authorization": f"Bearer {api.key}",
        "Accept": "application/json, application/x-ndjson",
        "User-Agent": f"sessionvault-cli/{__version__}",
    }
    if content_type:
        headers["Content-Type"] = content_type
    try:
        conn.request(method, target, body=body, headers=headers)
        return conn, conn.getresponse()
    except (OSError, HTTPException) as exc:
        conn.close()
        raise _unreachable(api, exc) from None


def read_answer(response: HTTPResponse) -> bytes:
    try:
        raw = response.read(MAX_ANSWER + 1)
    except (OSError, HTTPException) as exc:
        raise Unavailable(f"the answer was cut off ({type(exc).__name__}): try again") from None
    if len(raw) > MAX_ANSWER:
        raise UpstreamError(f"the answer is larger than {MAX_ANSWER} bytes")
    return raw


def read_line(api: Api, response: HTTPResponse) -> bytes:
    try:
        line = response.readline(MAX_LINE + 1)
    except (OSError, HTTPException) as exc:
        raise Unavailable(
            f"the export from {api.root} was cut off ({type(exc).__name__}): nothing is lost on"
            " the server; export again"
        ) from None
    if len(line) > MAX_LINE:
        raise UpstreamError(f"an export line is larger than {MAX_LINE} bytes")
    return line


def _unreachable(api: Api, exc: BaseException) -> Unavailable:
    reason = str(exc) or type(exc).__name__
    hint = " (is the local server running? `sessionvault dev` starts it)" if api.local else ""
    return Unavailable(f"cannot reach {api.root}: {reason}{hint}")


def failure(api: Api, status: int, raw: bytes, response: HTTPResponse) -> SessionVaultError:
    """The server's refusal as the project's error, with the server's own message."""
    code, message = _error_of(raw)
    message = message or f"HTTP {status}"
    retry = response.getheader("retry-after") or ""
    retry_after = int(retry) if retry.isdigit() else None
    if status == 401:
        return ConfigError(
            f"{api.root} refused the API key (401): give a key of this server with --key or {KEY_ENV}"
        )
    if status == 403 and code == "scope":
        return ScopeMissing(message)
    if status == 429:
        later = f" (try again in {retry_after} s)" if retry_after is not None else ""
        return RateLimited(f"{api.root} is rate limiting this key{later}", retry_after, _per_minute(raw))
    if status == 409 or code == "quota":
        return QuotaExceeded(message)
    if code == "provider":
        return ProviderUnavailable(message)
    if status >= 500:
        return Unavailable(f"{api.root} answered HTTP {status}: {message}", retry_after)
    if status in (400, 404, 413):
        return ValidationFailed(message)
    return UpstreamError(f"{api.root} answered HTTP {status}: {message}")


def _per_minute(raw: bytes) -> int | None:
    """The per-minute limit an import's 429 names (`error.per_minute`), else None."""
    try:
        value = json.loads(raw)["error"]["per_minute"]
    except (ValueError, LookupError, TypeError):
        return None
    return value if isinstance(value, int) and value > 0 else None


def _error_of(raw: bytes) -> tuple[str, str]:
    """(code, message) of an error body: the API's `{"error": {"code", "message"}}`, the edge's
    `{"error": "message"}` or a JSON-RPC error; ("", "") for anything else."""
    try:
        body = json.loads(raw)
    except ValueError:
        return "", ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str):
        return "", error
    if isinstance(error, dict):
        return str(error.get("code", "")), str(error.get("message", ""))
    return "", ""
