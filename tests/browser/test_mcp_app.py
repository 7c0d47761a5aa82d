"""The handoff view as an MCP App, in a real browser: a small host page built on the MCP Apps
SDK's host bridge (`AppBridge` of @modelcontextprotocol/ext-apps, from npm, with the MCP
TypeScript client) connects to the real server declaring the extension, finds the `ui://` link
on load_session / list_sessions, renders the App in a sandboxed iframe and hands it the tool
result, speaking 2026-07-28 (the declaration rides each request) or 2025-11-25 (declared only in
`initialize`, which this stateless server never sees: the link reaches it all the same). A click
on "Claim this handoff" goes from the App through the bridge (postMessage JSON-RPC tools/call) to
the server; the claim is then visible through load_session. The App makes no request of its own
(its CSP refuses one even when asked) and never sees the key."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from ..conftest import make_user
from ..support.jsonrpc import tool_result
from .apps_host import HostSite, NotInstalled, install
from .conftest import browser_required

REPO = "github.com/acme/payments"
HOST = "SessionVault test host"


@pytest.fixture(scope="module")
def apps_modules() -> Path:
    try:
        return install()
    except NotInstalled as why:
        if browser_required() or os.environ.get("SESSIONVAULT_REQUIRE_APPS_HOST") == "1":
            pytest.fail(str(why))
        pytest.skip(str(why))


def save(url: str, key: str, **args: Any) -> dict[str, Any]:
    out = tool_result(url, key, "save_session", **args)
    assert not out["isError"], out
    return out["structuredContent"]


@pytest.fixture
def handoff(server, runtime) -> Iterator[Any]:
    user = make_user(runtime)
    save(server.url, user.key, name="payments-retry", repo=REPO, client="claude-code", handoff=True,
         summary="Webhook retries are idempotent now; the dead-letter queue still needs a consumer.",
         plan=["Idempotency keys on webhooks", "Dead-letter consumer", "Alert on DLQ depth"],
         decisions=[{"decision": "Idempotency key = provider event id",
                     "reason": "providers resend the same id"}],
         todos=["Write the DLQ consumer", "Add the depth alarm"], files=["payments/webhooks.py"],
         errors=["IntegrityError on duplicate event 4f2c"],
         tried=["Locking the order row: deadlocks under load"])  # fmt: skip
    yield user


def open_host(
    page: Page, host: HostSite, tool: str, args: dict[str, Any], protocol: str = "2026-07-28"
) -> Any:
    # Tall enough for the whole App: headless Chromium paints an iframe's content within the
    # viewport only, so a full-page screenshot of a longer one would show it cut.
    page.set_viewport_size({"width": 1100, "height": 1500})
    query = urlencode({"tool": tool, "args": json.dumps(args), "protocol": protocol})
    page.goto(f"{host.origin}/host.html?{query}")
    expect(page.locator("#state")).to_have_text("rendered", timeout=20_000)
    expect(page.locator("#protocol")).to_have_text(protocol)  # what the client negotiated
    return page.frame_locator("iframe[title='SessionVault handoff']")


def test_the_host_renders_the_app_and_a_claim_goes_through_the_bridge(
    server, handoff, page: Page, artifacts: Path, apps_modules: Path
) -> None:
    requests: list[tuple[Any, str]] = []
    page.on("request", lambda r: requests.append((r.frame, r.url)))
    with HostSite(apps_modules, server.url, handoff.key) as host:
        app = open_host(page, host, "load_session", {"name": "payments-retry"})
        expect(app.get_by_role("heading", name="payments-retry")).to_be_visible()
        for section in ("Summary", "Plan", "Decisions", "Todos", "Files", "Errors", "Tried"):
            expect(app.get_by_role("heading", name=section, exact=True)).to_be_visible()
        expect(app.get_by_text("Because: providers resend the same id")).to_be_visible()
        expect(app.get_by_text("Handoff: open")).to_be_visible()
        page.screenshot(path=str(artifacts / "mcp-app-handoff.png"), full_page=True)

        # The App's own CSP: even asked from inside it, a request goes nowhere.
        (frame,) = [f for f in page.frames if f is not page.main_frame]
        tried = frame.evaluate(
            "url => fetch(url).then(() => 'fetched', () => 'blocked')",
            server.url.removesuffix("/mcp") + "/health",
        )
        assert tried == "blocked"

        app.get_by_role("button", name="Claim this handoff").click()
        expect(app.get_by_text(f"Claimed payments-retry version 1 for {HOST}.")).to_be_visible()
        expect(app.get_by_text(f"Handoff: accepted by {HOST} (with {handoff.key[:12]})")).to_be_visible()
        expect(app.get_by_role("button", name="Claim this handoff")).to_have_count(0)
        page.wait_for_timeout(500)  # the host resizes the iframe to the App's new height
        page.screenshot(path=str(artifacts / "mcp-app-claimed.png"), full_page=True)
        calls = [json.loads(body) for body in host.forwarded]
        claims = [
            c for c in calls if c.get("method") == "tools/call" and c["params"]["arguments"].get("accept")
        ]
        assert [c["params"]["arguments"] for c in claims] == [{"repo": REPO, "accept": True, "client": HOST}]
        assert handoff.key not in page.content() and handoff.key not in frame.content()

    loaded = tool_result(server.url, handoff.key, "load_session", name="payments-retry")["structuredContent"]
    assert loaded["handoff"]["state"] == "accepted"
    assert loaded["handoff"]["accepted_by"] == HOST and loaded["handoff"]["accepted_with"] == handoff.key[:12]
    app_requests = [url for f, url in requests if f is not page.main_frame]
    assert app_requests == []  # the iframe loaded from srcdoc and asked for nothing


def test_the_session_list_opens_a_session_through_the_bridge(
    server, handoff, page: Page, artifacts: Path, apps_modules: Path
) -> None:
    save(server.url, handoff.key, name="ledger-export", repo="github.com/acme/ledger", summary="CSV export")
    with HostSite(apps_modules, server.url, handoff.key) as host:
        app = open_host(page, host, "list_sessions", {})
        expect(app.get_by_role("heading", name="Saved sessions")).to_be_visible()
        page.screenshot(path=str(artifacts / "mcp-app-list.png"), full_page=True)
        app.get_by_role("button", name="Open ledger-export").click()
        expect(app.get_by_role("heading", name="ledger-export")).to_be_visible()
        expect(app.get_by_text("CSV export")).to_be_visible()


def test_a_host_speaking_2025_11_25_renders_the_app_too(
    server, handoff, page: Page, artifacts: Path, apps_modules: Path
) -> None:
    """The hosts that render Apps today mostly speak 2025-11-25: they declare the extension in
    `initialize`, which this stateless server never sees. The link rides every answer (a host
    without Apps ignores `_meta`), so the App reaches them; the claim goes through as on 2026."""
    with HostSite(apps_modules, server.url, handoff.key) as host:
        app = open_host(page, host, "load_session", {"name": "payments-retry"}, protocol="2025-11-25")
        expect(app.get_by_role("heading", name="payments-retry")).to_be_visible()
        expect(app.get_by_text("Handoff: open")).to_be_visible()
        page.screenshot(path=str(artifacts / "mcp-app-handoff-2025-11-25.png"), full_page=True)
        app.get_by_role("button", name="Claim this handoff").click()
        expect(app.get_by_text(f"Claimed payments-retry version 1 for {HOST}.")).to_be_visible()
        calls = [json.loads(body) for body in host.forwarded]
    # The 2025 connect sequence: the declaration only in initialize, no request carries one.
    first = calls[0]
    assert first["method"] == "initialize" and first["params"]["protocolVersion"] == "2025-11-25"
    assert first["params"]["capabilities"]["extensions"] == {
        "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}
    }
    assert all(
        "io.modelcontextprotocol/clientCapabilities" not in (c.get("params") or {}).get("_meta", {})
        for c in calls
    )
    assert "server/discover" not in {c.get("method") for c in calls}
    loaded = tool_result(server.url, handoff.key, "load_session", name="payments-retry")["structuredContent"]
    assert loaded["handoff"]["state"] == "accepted" and loaded["handoff"]["accepted_by"] == HOST
