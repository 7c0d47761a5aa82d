"""The web view on a phone: at 390 px wide (an iPhone 12 to 15, most Android phones near it), no
page is wider than the screen, so nothing scrolls sideways; long names, keys, hashes and tables
fit by wrapping or scrolling inside their own box. Debian's Chromium with mobile emulation (the
page's own viewport meta tag honoured), every page of the view with the story the desktop test
tells (versions, an accepted and an open handoff, activity, two keys), signed in and out."""

from __future__ import annotations

import re
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
    """How wide the document is against the screen, the first elements that stick out (to say
    why), and every button or form control that is not wholly on the screen: a list's table is
    a column of cards there, so nothing, tables included, may need a sideways scroll."""
    return page.evaluate(
        """() => {
            const width = document.documentElement.clientWidth;
            const out = el => {
                const r = el.getBoundingClientRect();
                return r.right > width + 1 || r.left < -1;
            };
            const wide = [...document.querySelectorAll('body *')].filter(out).slice(0, 5)
                .map(el => `${el.tagName}.${el.className} ${Math.round(el.getBoundingClientRect().right)}`);
            const controls = 'main button, main select, main input:not([type=hidden])';
            const hidden = [...document.querySelectorAll(controls)]
                .filter(el => {
                    const r = el.getBoundingClientRect();
                    return r.width < 1 || r.height < 1 || out(el);
                })
                .map(el => `${el.tagName} ${el.textContent.trim() || el.name}`);
            const buttons = document.querySelectorAll('main button').length;
            return {scroll: document.documentElement.scrollWidth, width, wide, hidden, buttons};
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
        assert measured["scroll"] <= measured["width"] and not measured["hidden"], (name, measured)
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
    problems, buttons = {}, {}
    for name, path in pages.items():
        phone.goto(base + path)
        measured = overflow(phone)
        phone.screenshot(path=str(artifacts / f"phone-{name}.png"), full_page=True)
        buttons[name] = measured["buttons"]
        if measured["scroll"] > measured["width"] or measured["hidden"]:
            problems[name] = measured
    assert problems == {}, "\n".join(f"{k}: {v}" for k, v in problems.items())
    assert buttons["keys"] >= 2  # a Revoke button per active key, each checked on screen above


def test_a_list_is_a_column_of_cards_on_a_phone_each_cell_under_its_name(server, owner, phone: Page) -> None:
    base = server.url.removesuffix("/mcp")
    sign_in(phone, base, owner.key)
    phone.goto(base + "/web/keys")
    card = phone.locator("table.cards tbody tr").first
    assert card.evaluate("el => getComputedStyle(el).display") == "block"
    assert phone.locator("table.cards thead").evaluate("el => el.getBoundingClientRect().height") <= 1
    label = card.locator("td").first.evaluate("el => getComputedStyle(el, '::before').content")
    assert label == '"Key"'
    revoke = phone.get_by_role("button", name=re.compile("^Revoke key"))
    assert revoke.count() >= 1 and revoke.first.is_visible()
    revoke.first.click()  # reachable: the confirmation page, on the same phone
    assert phone.get_by_role("heading", name=re.compile("Revoke")).is_visible()
