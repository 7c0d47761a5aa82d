"""A canned loopback HTTP server standing in for the API, for the laptop side's client tests."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sessionvault.local.remote.transport import Api

FORMAT = "sessionvault-export/1"
HEADER = json.dumps({"format": FORMAT}).encode()


@dataclass
class Canned:
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] | None = None  # sent chunked, then the connection is closed


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


class Fake:
    """Answers from `replies` in turn (the last one again when they run out); records requests."""

    def __init__(self) -> None:
        self.replies: list[Canned] = []
        self.seen: list[Seen] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                parts = urlsplit(self.path)
                fake.seen.append(
                    Seen(
                        self.command,
                        parts.path,
                        {k: v[-1] for k, v in parse_qs(parts.query).items()},
                        {k.lower(): v for k, v in self.headers.items()},
                        self.rfile.read(length),
                    )
                )
                reply = fake.replies.pop(0) if len(fake.replies) > 1 else fake.replies[0]
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                if reply.chunks is not None:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in reply.chunks:
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    return
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = do_DELETE = answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/mcp"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def reply(self, *replies: Canned) -> Api:
        self.replies = list(replies)
        return Api.at(self.url, "sv_live_test")


def error(code: str, message: str, **more: object) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, **more}}).encode()
