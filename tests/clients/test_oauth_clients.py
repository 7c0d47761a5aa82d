"""The OAuth path, proven with clients nobody here wrote: the real Codex CLI and Claude Code
log in to a server configured WITHOUT a key (their own discovery from our 401, their own
dynamic registration, PKCE and loopback callback), then list our tools with the token they
stored; Gemini CLI reports the server as needing authentication.

No real browser: each client is given a `$BROWSER` that only records the URL it was asked to
open; the test then does what the owner does in that browser, over plain HTTP: follows
/authorize to the consent page, posts the form with a real API key, and opens the Location the
server redirects to, which is the client's own loopback callback."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urljoin

import httpx2
import psycopg
import pytest

from sessionvault.core import oauth

from ..conftest import make_user
from ..support.oauth import csrf_of
from .conftest import Env, ToolCalls
from .test_claude_code import approve_project_servers, claude
from .test_codex import TOOLS, codex, mcp_server_status
from .test_gemini import NO_MODEL, gemini, trust_folder

LOGIN_TIMEOUT_S = 45.0


@dataclass
class Browser:
    """A `$BROWSER` that only writes down the URL it is asked to open."""

    script: Path
    opened: Path

    def url(self, timeout: float = LOGIN_TIMEOUT_S, hint: str = "") -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.opened.exists() and self.opened.read_text().strip():
                return self.opened.read_text().split()[0]
            time.sleep(0.2)
        raise AssertionError(f"the client never opened a browser{hint}")


@pytest.fixture
def browser(tmp_path: Path) -> Browser:
    opened = tmp_path / "opened-urls"
    script = tmp_path / "record-browser"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> {shlex.quote(str(opened))}\n')
    script.chmod(0o755)
    return Browser(script, opened)


def approve_in_browser(authorize_url: str, key: str) -> httpx2.Response:
    """What the owner does in the browser the client opened: /authorize sends it to the
    consent page, the form is posted with `key`, and the 303's Location (the client's loopback
    callback) is opened. Returns the client's answer to that callback."""
    with httpx2.Client(timeout=30) as http:
        sent = http.get(authorize_url)
        assert sent.status_code == 302, sent.text
        consent_url = urljoin(authorize_url, sent.headers["location"])
        page = http.get(consent_url)
        assert page.status_code == 200, page.text
        request = re.search(r'name="request" value="([^"]+)"', page.text)
        assert request, page.text
        form = {
            "request": request.group(1),
            "csrf": csrf_of(page.text),
            "api_key": key,
            "decision": "approve",
        }
        posted = http.post(
            urljoin(authorize_url, "/consent"),
            content=urlencode(form),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert posted.status_code == 303, posted.text
        callback = posted.headers["location"]
        assert "code=" in callback and callback.startswith(("http://127.0.0.1:", "http://localhost:")), (
            callback
        )
        return http.get(callback)


class Background:
    """A client command running in the background (on a pseudo-terminal when the client
    insists on one; with `stdin` typed in otherwise), its output collected as it comes."""

    def __init__(
        self, env: Env, argv: list[str], *, tty: bool = False, stdin: bytes = b"", **more: str
    ) -> None:
        self.chunks: list[bytes] = []
        master = slave = -1
        streams: dict[str, Any] = {
            "stdout": subprocess.PIPE,
            "stderr": subprocess.STDOUT,
            "stdin": subprocess.PIPE,
        }
        if tty:
            master, slave = os.openpty()
            streams = {"stdin": slave, "stdout": slave, "stderr": slave}
        self.proc = subprocess.Popen(
            argv, cwd=env.project, env=env.env(None, **more), start_new_session=True, **streams
        )
        if tty:
            os.close(slave)
        else:
            assert self.proc.stdin is not None
            self.proc.stdin.write(stdin)
            self.proc.stdin.close()
        self.reader = threading.Thread(target=self._drain, args=(master,), daemon=True)
        self.reader.start()

    def _drain(self, master: int) -> None:
        while True:
            try:
                chunk = os.read(master, 4096) if master >= 0 else self.proc.stdout.read1(4096)  # type: ignore[union-attr]
            except OSError:  # the pty closes with EIO once the client exits
                chunk = b""
            if not chunk:
                if master >= 0:
                    os.close(master)
                return
            self.chunks.append(chunk)

    @property
    def output(self) -> str:
        return b"".join(self.chunks).decode(errors="replace")

    def wait_for(self, *markers: str, timeout: float = LOGIN_TIMEOUT_S) -> str:
        """The first of `markers` to show in the output ("" if none did in time)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.output
            found = next((m for m in markers if m in out), None)
            if found or self.proc.poll() is not None:
                return found or next((m for m in markers if m in self.output), "")
            time.sleep(0.2)
        return ""

    def finish(self, timeout: float = LOGIN_TIMEOUT_S) -> tuple[int | None, str]:
        """(exit code, output); a client still running after `timeout` is stopped (None)."""
        try:
            code: int | None = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
            os.killpg(self.proc.pid, signal.SIGKILL)  # this command and its children only
            self.proc.wait(timeout=30)
        self.reader.join(timeout=10)
        return code, self.output


def token_rows(pg: Any, client_id: str) -> list[tuple[str, str, str, bytes]]:
    """(kind, user_id, resource, token_hash) of the tokens minted for `client_id`, read as the
    database owner (the serving role may not read the token table)."""
    with psycopg.connect(pg.owner_url) as conn:
        rows = conn.execute(
            "SELECT kind, user_id::text, resource, token_hash FROM oauth_tokens WHERE client_id = %s",
            (client_id,),
        ).fetchall()
    return [(r[0], r[1], r[2], bytes(r[3])) for r in rows]


def assert_minted_for(pg: Any, client_id: str, access_token: str, user_id: str, mcp_url: str) -> None:
    """The token the client stored is one the server minted for that client, for the approving
    user and bound to this server's /mcp."""
    assert access_token.startswith("sv_at_"), "the client stored something that is not our access token"
    rows = token_rows(pg, client_id)
    assert {(kind, user, resource) for kind, user, resource, _ in rows} == {
        ("access", user_id, mcp_url),
        ("refresh", user_id, mcp_url),
    }, rows
    assert oauth.digest(access_token) in {h for kind, _, _, h in rows if kind == "access"}


def admitted(tool_calls: ToolCalls, method: str, user_id: str) -> bool:
    return any(getattr(r, "status", None) == 200 for r in tool_calls.calls(method, user_id))


# --- Codex ---------------------------------------------------------------------------------


def codex_oauth_config(env: Env, url: str) -> None:
    """The server by URL only: no `bearer_token_env_var`, no `http_headers`. Codex keeps MCP
    OAuth credentials in the OS keyring by default; there is none here, so `file`
    ($CODEX_HOME/.credentials.json)."""
    path = env.home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'mcp_oauth_credentials_store = "file"\n\n[mcp_servers.sessionvault]\nurl = "{url}"\n')


def codex_auth_column(env: Env) -> str:
    done = env.run([codex(env), "mcp", "list"], None)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(row for row in done.stdout.splitlines() if row.startswith("sessionvault"))
    return line.split("enabled", 1)[1].strip()


def codex_stored_login(env: Env) -> dict[str, Any]:
    stored = json.loads((env.home / ".codex" / ".credentials.json").read_text())
    [entry] = [v for k, v in stored.items() if k.startswith("sessionvault|")]
    return entry  # type: ignore[no-any-return]


def test_codex_logs_in_through_oauth_and_lists_our_tools_with_the_token(
    server, runtime, pg, client_env: Env, browser: Browser, tool_calls: ToolCalls
) -> None:
    user = make_user(runtime)
    codex_oauth_config(client_env, server.url)
    # Codex probes our discovery for a server without a bearer: OAuth-capable, not logged in.
    assert codex_auth_column(client_env) == "Not logged in"
    row = mcp_server_status(client_env, None)
    assert not row["tools"] and row.get("toolsError"), row

    login = Background(
        client_env, [codex(client_env), "mcp", "login", "sessionvault"], BROWSER=str(browser.script)
    )
    try:
        landed = approve_in_browser(browser.url(), user.key)
    finally:
        code, out = login.finish()
    assert landed.status_code == 200 and "Authentication complete" in landed.text, landed.text
    assert code == 0 and "Successfully logged in to MCP server 'sessionvault'" in out, out

    stored = codex_stored_login(client_env)
    assert stored["server_url"] == server.url and stored.get("refresh_token"), stored.keys()
    assert_minted_for(pg, stored["client_id"], stored["access_token"], str(user.id), server.url)
    assert codex_auth_column(client_env) == "OAuth"
    # No key anywhere in Codex's config or environment: the token is what gets it in.
    row = mcp_server_status(client_env, None)
    assert row.get("toolsError") is None and row["serverInfo"]["name"] == "sessionvault", row
    assert set(row["tools"]) >= TOOLS, row["tools"].keys()
    assert admitted(tool_calls, "tools/list", user.id)


# --- Claude Code ---------------------------------------------------------------------------


def claude_oauth_config(env: Env, url: str) -> None:
    (env.project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"sessionvault": {"type": "http", "url": url}}}, indent=2)
    )
    approve_project_servers(env)


def claude_status(env: Env) -> str:
    done = env.run([claude(env), "mcp", "list"], None)
    assert done.returncode == 0, done.stdout + done.stderr
    return next(row for row in done.stdout.splitlines() if row.startswith("sessionvault"))


def test_claude_code_reports_a_keyless_server_as_needing_authentication(server, client_env: Env) -> None:
    """Our 401 with its resource_metadata challenge reads as "needs authentication", not as a
    failed or unreachable server."""
    claude_oauth_config(client_env, server.url)
    line = claude_status(client_env)
    assert "Needs authentication" in line and "Failed" not in line, line


def test_claude_code_logs_in_through_oauth_and_connects_with_the_token(
    server, runtime, pg, client_env: Env, browser: Browser, tool_calls: ToolCalls
) -> None:
    """`claude mcp login` refuses to run without a terminal, so it gets a pseudo-terminal."""
    user = make_user(runtime)
    claude_oauth_config(client_env, server.url)
    login = Background(
        client_env,
        [claude(client_env), "mcp", "login", "sessionvault"],
        tty=True,
        BROWSER=str(browser.script),
    )
    try:
        landed = approve_in_browser(browser.url(), user.key)
    finally:
        code, out = login.finish()
    assert landed.status_code == 200, landed.text
    assert code == 0 and 'Authenticated with "sessionvault"' in out, out

    stored = json.loads((client_env.home / ".claude" / ".credentials.json").read_text())["mcpOAuth"]
    [entry] = [v for k, v in stored.items() if k.startswith("sessionvault|")]
    assert entry["serverUrl"] == server.url and entry.get("refreshToken"), entry.keys()
    assert_minted_for(pg, entry["clientId"], entry["accessToken"], str(user.id), server.url)
    assert "Connected" in claude_status(client_env)
    assert admitted(tool_calls, "initialize", user.id) or admitted(tool_calls, "tools/list", user.id)


# --- Gemini CLI ----------------------------------------------------------------------------


def gemini_oauth_config(env: Env, url: str, **server: Any) -> None:
    settings = env.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "mcpServers": {"sessionvault": {"httpUrl": url, **server}},
        "security": {"auth": {"selectedType": "gemini-api-key"}},  # a headless run needs one
    }
    settings.write_text(json.dumps(data, indent=2))
    trust_folder(env)


def gemini_session(env: Env, closed_url: str, answer: bytes = b"", **more: str) -> Background:
    """A headless `gemini -d -p hi` (debug: only then are MCP diagnostics printed). It connects
    its MCP servers first; its model endpoint is closed, so it never gets further."""
    argv = [gemini(env), "-d", "-p", "hi"]
    return Background(env, argv, stdin=answer, GOOGLE_GEMINI_BASE_URL=closed_url, **NO_MODEL, **more)


def test_gemini_reports_a_keyless_server_as_requiring_authentication(
    server, client_env: Env, closed_url: str
) -> None:
    """Gemini CLI 0.61.0's `mcp list` has no such state (any failure is "Disconnected"); its
    session diagnostics do: our 401 is read as "requires authentication", with the command
    that logs in."""
    gemini_oauth_config(client_env, server.url)
    listed = client_env.run([gemini(client_env), "mcp", "list"], None, **NO_MODEL)
    assert "sessionvault" in listed.stdout + listed.stderr
    wanted = "MCP server 'sessionvault' requires authentication using: /mcp auth sessionvault"
    session = gemini_session(client_env, closed_url)
    found = session.wait_for(wanted)
    _, out = session.finish(timeout=0)
    assert found == wanted, out


def test_gemini_logs_in_through_automatic_oauth_and_connects_with_the_token(
    server, runtime, pg, client_env: Env, browser: Browser, closed_url: str, tool_calls: ToolCalls
) -> None:
    """With `oauth.enabled` on the server entry, a headless session answers its 401 by logging
    in: it asks "Do you want to continue? [Y/n]" on stdin, opens the browser with xdg-open,
    waits on its loopback callback, then connects with the token it stored."""
    user = make_user(runtime)
    gemini_oauth_config(client_env, server.url, oauth={"enabled": True})
    opener = browser.script.parent / "opener"
    opener.mkdir()
    (opener / "xdg-open").symlink_to(browser.script)
    path = os.pathsep.join([str(opener), client_env.env(None)["PATH"]])
    session = gemini_session(client_env, closed_url, answer=b"y\n", PATH=path)
    try:
        # Its debug log is flushed late: what it does shows in the browser and on the server.
        hint = ": no 401 challenge on its HEAD /mcp, and it refused the root resource metadata"
        landed = approve_in_browser(browser.url(timeout=20, hint=hint), user.key)
        assert landed.status_code == 200 and "Authentication Successful" in landed.text, landed.text
        deadline = time.monotonic() + LOGIN_TIMEOUT_S
        while not admitted(tool_calls, "tools/list", user.id) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert admitted(tool_calls, "tools/list", user.id), "Gemini did not list our tools with its token"
    finally:
        session.finish(timeout=0)
    listed = client_env.run([gemini(client_env), "mcp", "list"], None, **NO_MODEL)
    assert "Connected" in listed.stdout + listed.stderr and "Disconnected" not in listed.stdout, listed.stdout
