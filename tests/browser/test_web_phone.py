"""The web view on a phone: at 390 px wide (an iPhone 12 to 15, most Android phones near it), no
page is wider than the screen, so nothing scrolls sideways; long names, keys, hashes and tables
fit by wrapping or scrolling inside their own box. Debian's Chromium with mobile emulation (the
page's own viewport meta tag honoured), every page of the view with the story the desktop test
tells (versions, an accepted and an open handoff, activity, two keys), signed in and out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from sessionvault.service import accounts

from ..conftest import admin_db
from .test_web_view import REPO, owner, save, sign_in

__all__ = ["owner"]  # the desktop test's fixture: a user with a story to show

PHONE = {"width": 390, "height": 844}
LONG = "a-session-name-far-longer-than-any-phone-screen-is-wide-" * 3


@pytest.fixture
def phone(browser: Browser) -> Iterator[Page]:
    ctx = browser.new_context(viewport=PHONE, device_scale_factor=3, is_mobile=True, has_touch=True)
    ctx.set_default_timeout(10_000)
    yield ctx.new_page()
    ctx.close()


def overflow(page: Page) -> dict[str, Any]:
    """How wide the document is against the screen, and (to say why) the first elements that
    stick out, but for those in a table: a table may scroll inside its own box."""
    return page.evaluate(
        """() => {
            const width = document.documentElement.clientWidth;
            const wide = [...document.querySelectorAll('body *')]
                .filter(el => el.getBoundingClientRect().right > width + 1 && !el.closest('table'))
                .slice(0, 5)
                .map(el => `${el.tagName}.${el.className} ${Math.round(el.getBoundingClientRect().right)}`);
            return {scroll: document.documentElement.scrollWidth, width, wide};
        }"""
    )


def test_no_page_scrolls_sideways_on_a_phone(server, owner, phone: Page, artifacts: Path) -> None:
    base = server.url.removesuffix("/mcp")
    save(server.url, owner.key, name=LONG, repo=REPO + "/" + "deep/" * 20, client="claude-code",
         summary="x" * 300 + " " + "https://example.com/" + "y" * 200,
         files=["src/" + "very_long_directory_name/" * 8 + "file.py"])  # fmt: skip
    accounts.create_key(admin_db(), owner.id, "a key with a long label " * 3, ("read",))
    pages = {"signin": "/"}
    for name, path in pages.items():
        phone.goto(base + path)
        measured = overflow(phone)
        assert measured["scroll"] <= measured["width"], (name, measured)
    sign_in(phone, base, owner.key)
    pages = {
        "sessions": "/",
        "session": "/web/session?name=checkout-redesign",
        "long-session": f"/web/session?name={LONG}",
        "versions": "/web/versions?name=checkout-redesign",
        "diff": "/web/versions?name=checkout-redesign&from=1&to=3",
        "handoffs": "/web/handoffs",
        "activity": "/web/activity",
        "keys": "/web/keys",
        "not-found": "/web/nope",
    }
    problems = {}
    for name, path in pages.items():
        phone.goto(base + path)
        measured = overflow(phone)
        phone.screenshot(path=str(artifacts / f"phone-{name}.png"), full_page=True)
        if measured["scroll"] > measured["width"]:
            problems[name] = measured
    assert problems == {}, "\n".join(f"{k}: {v}" for k, v in problems.items())
