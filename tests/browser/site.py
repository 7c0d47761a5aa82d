"""A tiny web site on a loopback port, for the pages around the one under test: the OAuth
client's redirect target (it records what the browser brings back) and a page at another
origin that tries to frame the consent page."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class LocalSite:
    """Serves `pages` (path -> HTML) on 127.0.0.1; every GET's path and query are kept, in order."""

    def __init__(self, pages: dict[str, str] | None = None) -> None:
        self.pages = dict(pages or {})
        self.visits: list[tuple[str, dict[str, list[str]]]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                site.visits.append((parts.path, parse_qs(parts.query)))
                body = site.pages.get(parts.path, "<p>redirect received</p>").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:  # keep the test output clean
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> LocalSite:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def visits_to(self, path: str) -> list[dict[str, list[str]]]:
        return [query for p, query in self.visits if p == path]
