"""The clients page over real HTTP (GET /web/clients): a handoff from one client to another
draws as one arrow in the page's inline SVG, a checkpoint gives its client a last-checkpoint
time, a hostile client name stays text, and the page keeps the web view's CSP (no script)."""

from __future__ import annotations

import html
import re

from ..conftest import hook_key, make_user
from ..support.jsonrpc import tool_result
from .test_web import HOSTILE, REPO, Browser, browser, save, text_of

__all__ = ["browser"]  # the fixture, shared with test_web.py


def test_clients_page_draws_who_handed_off_to_whom(server, runtime, browser: Browser) -> None:
    user = make_user(runtime)
    save(server.url, user.key, name="plan", summary="s", repo=REPO, client=HOSTILE, handoff=True)
    tool_result(server.url, user.key, "load_session", repo=REPO, accept=True, client="codex")
    tool_result(
        server.url, hook_key(user), "checkpoint_session", name="auto/codex/abc", summary="s", client="codex"
    )
    browser.sign_in(user.key)
    reply = browser.get("/web/clients")
    assert reply.status_code == 200 and "default-src 'none'" in reply.headers["content-security-policy"]
    assert "<script" not in reply.text and reply.text.count("</svg>") == 1
    assert f"<title>{html.escape(HOSTILE)} to codex: 1</title>" in reply.text
    text = text_of(reply)
    assert re.search(r"codex +\d{4}-\d\d-\d\d \d\d:\d\d UTC", text), text  # its last checkpoint
    assert f"{HOSTILE} → codex: 1" in text
