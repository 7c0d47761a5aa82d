"""The MCP Apps host for tests/browser/test_mcp_app.py: @modelcontextprotocol/ext-apps (pinned in
apps-host/package-lock.json) installed into .venv/apps-host by `npm ci --ignore-scripts` (npm's
registry only: no install script runs and no browser is downloaded; reused while the lock file
is the same), and a loopback site that serves the host page and those modules and passes /mcp on
to the real server, adding the key: it stands in for a host's backend, so the page (and the App
inside it) never holds a credential."""

from __future__ import annotations

import hashlib
import mimetypes
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2

HERE = Path(__file__).resolve().parent / "apps-host"
ROOT = Path(__file__).resolve().parents[2]
INSTALLED = ROOT / ".venv" / "apps-host"
PACKAGE = "@modelcontextprotocol/ext-apps"
# What a host passes on to the server, and back: MCP's own headers, never the browser's Origin.
FORWARDED = (
    "content-type",
    "accept",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-session-id",
    "last-event-id",
)
RETURNED = ("content-type", "mcp-session-id", "mcp-protocol-version", "www-authenticate")


class NotInstalled(RuntimeError):
    pass


def install() -> Path:
    """node_modules of apps-host/package-lock.json under .venv/apps-host (npm ci once per lock)."""
    lock = (HERE / "package-lock.json").read_bytes()
    stamp = INSTALLED / ".lock-sha256"
    digest = hashlib.sha256(lock).hexdigest()
    modules = INSTALLED / "node_modules"
    if stamp.exists() and stamp.read_text() == digest and (modules / PACKAGE / "package.json").exists():
        return modules
    npm = shutil.which("npm")
    if npm is None:
        raise NotInstalled("npm is missing: the MCP Apps host needs @modelcontextprotocol/ext-apps from npm")
    INSTALLED.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(HERE / name, INSTALLED / name)
    done = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=INSTALLED,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise NotInstalled(f"npm ci failed: {done.stderr[-2000:]}")
    stamp.write_text(digest)
    return modules


class HostSite:
    """host.html, host.js and node_modules on 127.0.0.1; /mcp forwarded to `mcp_url` with `key`."""

    def __init__(self, modules: Path, mcp_url: str, key: str) -> None:
        self.forwarded: list[str] = []  # the JSON-RPC bodies that went to the server
        site = self
        client = httpx2.Client(timeout=30)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _file(self, path: Path) -> None:
                body = path.read_bytes()
                kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                if path.suffix in (".js", ".mjs"):
                    kind = "text/javascript"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/mcp":
                    return self._forward()
                if path in ("/host.html", "/host.js"):
                    return self._file(HERE / path.lstrip("/"))
                if path.startswith("/node_modules/"):
                    target = (modules / path.removeprefix("/node_modules/")).resolve()
                    if target.is_relative_to(modules.resolve()) and target.is_file():
                        return self._file(target)
                self.send_error(404)

            def do_POST(self) -> None:
                if self.path.split("?", 1)[0] != "/mcp":
                    return self.send_error(404)
                self._forward()

            def do_DELETE(self) -> None:
                self._forward()

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if body:
                    site.forwarded.append(body.decode())
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in FORWARDED or k.lower().startswith("mcp-param-")
                }
                headers["Authorization"] = f"Bearer {key}"
                reply = client.request(self.command, mcp_url, content=body, headers=headers)
                self.send_response(reply.status_code)
                for name in RETURNED:
                    if name in reply.headers:
                        self.send_header(name, reply.headers[name])
                self.send_header("Content-Length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

            def log_message(self, *args: object) -> None:
                pass

        self.client = client
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HostSite:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.client.close()
