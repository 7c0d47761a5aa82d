"""How the web view answers: an HTML page or a 303 redirect, each with the consent page's headers
(strict CSP with no script, frame-ancestors 'none', no-store) and any cookies to set, and the
`Refused` an error page travels in (the app's catch of `Refused` sends it as it is)."""

from __future__ import annotations

from starlette.types import Send

from sessionvault.errors import ErrorClass, Refused
from sessionvault.server.oauth.consent import page_headers

HTML = "text/html; charset=utf-8"


def refusal(
    status: int,
    body: bytes,
    error_class: ErrorClass,
    headers: dict[str, str] | None = None,
    *,
    edge_check: str = "",
) -> Refused:
    """An HTML answer the app's catch of `Refused` sends as it is."""
    every = {"Content-Type": HTML, **page_headers(), **(headers or {})}
    return Refused(status, body, error_class, every, edge_check=edge_check)


async def send_page(send: Send, body: bytes) -> None:
    await send_html(send, 200, body)


async def send_html(send: Send, status: int, body: bytes, cookies: list[str] | None = None) -> None:
    headers = [(b"content-type", HTML.encode()), (b"content-length", str(len(body)).encode())]
    await _send(send, status, headers, body, cookies)


async def redirect(send: Send, location: str, cookies: list[str] | None = None) -> None:
    headers = [(b"location", location.encode()), (b"content-length", b"0")]
    await _send(send, 303, headers, b"", cookies)


async def _send(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes, cookies: list[str] | None
) -> None:
    headers += [(k.lower().encode(), v.encode()) for k, v in page_headers().items()]
    headers += [(b"set-cookie", c.encode()) for c in cookies or []]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
