"""A stand-in model endpoint for the real-client tier: an HTTP server on 127.0.0.1 (a random
port) that records every request a client sends to its "model" and answers each one with a
well-formed, non-retryable error. No model and no API key are involved: the point is what the
client put into its request (for example the context a session-start hook printed), not any reply.

One error body serves the three API families the clients speak: Anthropic Messages
(`{"type": "error", "error": {"type", "message"}}`), Gemini (`{"error": {"code", "message",
"status"}}`) and OpenAI Chat Completions / Responses (`{"error": {"message", "type", "code"}}`).
400 is the status every one of them treats as final (no retry), so a client gives up at once."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

ERROR_STATUS = 400
ERROR_BODY = json.dumps(
    {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "model recorder: no model behind this endpoint",
            "code": ERROR_STATUS,
            "status": "INVALID_ARGUMENT",
        },
    }
).encode()
_MAX_BODY = 20_000_000  # a first request with every tool schema is well under this


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    body: str


class ModelRecorder:
    """`with ModelRecorder() as model:` then point a client at `model.base_url`."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _record_and_refuse(self) -> None:
                size = min(int(self.headers.get("Content-Length") or 0), _MAX_BODY)
                body = self.rfile.read(size).decode("utf-8", "replace") if size else ""
                request = Recorded(self.command, self.path, body)
                recorder._add(request)
                status, content_type, payload = recorder.answer(request)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(payload)

            do_POST = do_GET = do_PUT = _record_and_refuse

            def log_message(self, format: str, *args: object) -> None:
                pass  # the test asserts on `requests`; no stderr noise

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def answer(self, request: Recorded) -> tuple[int, str, bytes]:
        """(status, content type, body) of the reply to `request`: the final error here; a
        scripted model (tests/support) answers its provider's API instead."""
        return ERROR_STATUS, "application/json", ERROR_BODY

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _add(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def bodies(self) -> list[str]:
        with self._lock:
            return [r.body for r in self.requests]

    def saw(self, text: str) -> bool:
        """Whether any request body so far contains `text` (as sent, or JSON-escaped)."""
        escaped = json.dumps(text)[1:-1]
        return any(text in body or escaped in body for body in self.bodies())

    def summary(self) -> str:
        """What arrived, for an assertion message: method, path and size of each request."""
        with self._lock:
            rows = [f"{r.method} {r.path} ({len(r.body)} chars)" for r in self.requests]
        return "; ".join(rows) or "no request reached the model endpoint"

    def __enter__(self) -> ModelRecorder:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
