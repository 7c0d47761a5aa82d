"""The web view in a real browser (Debian's headless Chromium): sign in with a key, browse the
sessions by repo, open one, compare two versions, look at handoffs and activity, revoke a key
through its confirmation step, sign out; all by keyboard where a person would type. A forged
CSRF token is refused, a page of another origin cannot frame the view or post its forms, and
the page runs no script at all. Screenshots of the main pages go to tests/.artifacts/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from sessionvault.service import accounts

from ..conftest import admin_db, make_user
from ..support.jsonrpc import post, tool_result
from .site import LocalSite

REPO = "github.com/acme/widget"


def save(url: str, key: str, **args: Any) -> dict[str, Any]:
    out = tool_result(url, key, "save_session", **args)
    assert not out["isError"], out
    return out["structuredContent"]


@pytest.fixture
def owner(server, runtime) -> Iterator[Any]:
    """A user with a story to show: a plan in three versions, a handoff claimed, one open, two
    repos, and a second key to revoke."""
    user = make_user(runtime)
    url = server.url
    save(url, user.key, name="checkout-redesign", repo=REPO, client="claude-code",
         summary="Started the checkout redesign: cart totals move server-side.",
         plan=["Move totals to the API", "Render the cart from the API"],
         decisions=[{"decision": "Totals computed server-side", "reason": "one source of truth for tax"}],
         todos=["Write the totals endpoint"], files=["api/cart.py"])  # fmt: skip
    save(url, user.key, name="checkout-redesign", repo=REPO, client="codex",
         summary="Totals endpoint done; the cart page still renders totals itself.",
         plan=["Move totals to the API", "Render the cart from the API", "Delete the client-side tax table"],
         decisions=[{"decision": "Totals computed server-side", "reason": "one source of truth for tax"},
                    {"decision": "Keep cents as integers", "reason": "no float rounding in totals"}],
         todos=["Switch cart.tsx to /api/cart/totals", "Remove tax.ts"],
         files=["api/cart.py", "web/cart.tsx"], errors=["TypeError: total is undefined (cart.tsx:41)"],
         tried=["Memoising totals in the client: stale after coupon changes"], handoff=True)  # fmt: skip
    tool_result(url, user.key, "load_session", repo=REPO, accept=True, client="gemini-cli")
    save(url, user.key, name="checkout-redesign", repo=REPO, client="gemini-cli",
         summary="Cart renders server totals; tax table removed. Next: coupon edge cases.",
         plan=["Move totals to the API", "Render the cart from the API", "Delete the client-side tax table",
               "Cover coupons stacking"],
         decisions=[{"decision": "Totals computed server-side", "reason": "one source of truth for tax"},
                    {"decision": "Keep cents as integers", "reason": "no float rounding in totals"}],
         todos=["Test two coupons on one cart"], files=["api/cart.py", "web/cart.tsx", "api/coupons.py"],
         handoff=True, to_client="cursor")  # fmt: skip
    save(url, user.key, name="flaky-ci", repo="github.com/acme/infra", client="cursor",
         summary="CI flakes on the Postgres service container; retries hide it.",
         todos=["Pin the postgres image digest"])  # fmt: skip
    yield user


def sign_in(page: Page, base: str, key: str) -> None:
    page.goto(base + "/")
    page.get_by_label("API key").fill(key)
    with page.expect_navigation():
        page.keyboard.press("Enter")  # the form submits from the keyboard
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def test_a_person_signs_in_browses_compares_revokes_and_signs_out(
    server, owner, page: Page, context: BrowserContext, artifacts: Path, capfd
) -> None:
    base = server.url.removesuffix("/mcp")
    spare, spare_prefix = accounts.create_key(admin_db(), owner.id, "old laptop", ("read", "write"))
    scripts: list[str] = []
    page.on("console", lambda m: scripts.append(m.text))

    page.goto(base + "/")
    expect(page.get_by_role("heading", name="Sign in to SessionVault")).to_be_visible()
    page.screenshot(path=str(artifacts / "web-signin.png"), full_page=True)
    sign_in(page, base, owner.key)
    cookies = {c["name"]: c for c in context.cookies()}
    assert cookies["sv_web"]["httpOnly"] and cookies["sv_web"]["sameSite"] == "Strict"
    assert owner.key not in cookies["sv_web"]["value"] and "sv_web_signin" not in cookies
    assert owner.key not in page.url

    # Sessions by repo, newest repo first; the search box (no embedding provider here: text match)
    headings = page.locator("main h2").all_inner_texts()
    assert headings[0].startswith("github.com/acme/infra") and headings[1].startswith(REPO)
    page.screenshot(path=str(artifacts / "web-sessions.png"), full_page=True)
    page.get_by_label("Search sessions").fill("postgres")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("link", name="flaky-ci")).to_be_visible()
    assert page.get_by_role("link", name="checkout-redesign").count() == 0

    # One session, as readable sections
    page.get_by_role("link", name="Sessions", exact=True).click()
    page.get_by_role("link", name="checkout-redesign").click()
    for section in ("Summary", "Plan", "Decisions", "Todos", "Files", "Errors", "Tried"):
        expect(page.get_by_role("heading", name=section, exact=True)).to_be_visible()
    expect(page.get_by_text("Because: no float rounding in totals")).to_be_visible()
    assert "version 3 of 3" in page.inner_text("main")
    page.screenshot(path=str(artifacts / "web-session.png"), full_page=True)

    # Compare version 1 with version 3
    page.get_by_role("link", name="Compare two versions").click()
    page.get_by_label("From", exact=True).select_option("1")
    page.get_by_label("To", exact=True).select_option("3")
    page.get_by_role("button", name="Compare").click()
    assert "Changes from version 1 to version 3" in page.inner_text("main")
    added = page.locator("li.add").all_inner_texts()
    assert any("Cover coupons stacking" in a for a in added)
    assert any("Started the checkout redesign" in r for r in page.locator("li.del").all_inner_texts())
    page.screenshot(path=str(artifacts / "web-diff.png"), full_page=True)

    # Handoffs: the claimed one names who claimed it and with which key; the open one its target
    page.get_by_role("link", name="Handoffs").click()
    text = page.inner_text("main")
    assert re.search(r"accepted by gemini-cli \(with " + re.escape(owner.key[:12]) + r"\)", text), text
    assert re.search(r"open to cursor, until", text), text
    page.screenshot(path=str(artifacts / "web-handoffs.png"), full_page=True)

    page.get_by_role("link", name="Activity").click()
    assert page.get_by_text("save_session").first.is_visible()
    page.screenshot(path=str(artifacts / "web-activity.png"), full_page=True)

    # Keys: revoke the spare one, with the confirmation step, by keyboard
    page.get_by_role("link", name="Keys").click()
    page.screenshot(path=str(artifacts / "web-keys.png"), full_page=True)
    page.get_by_role("button", name=f"Revoke key {spare_prefix}").focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Revoke this key?")).to_be_visible()
    page.screenshot(path=str(artifacts / "web-revoke-confirm.png"), full_page=True)
    assert tool_result(server.url, spare, "list_sessions")["isError"] is False  # not yet
    page.get_by_role("button", name=f"Revoke {spare_prefix}").click()
    expect(page.get_by_text(f"Key {spare_prefix} was revoked.")).to_be_visible()
    reply = post(server.url, spare, "tools/list")
    assert reply.status_code == 401

    with page.expect_navigation():
        page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("API key")).to_be_visible()
    assert "sv_web" not in {c["name"] for c in context.cookies()}
    page.goto(base + "/web/keys")
    expect(page.get_by_label("API key")).to_be_visible()  # signed out: the sign-in page

    assert scripts == []  # nothing ran on any page
    logged = capfd.readouterr()
    assert owner.key not in logged.out + logged.err and spare not in logged.out + logged.err


def test_every_control_is_reachable_and_labelled(server, owner, page: Page) -> None:
    base = server.url.removesuffix("/mcp")
    sign_in(page, base, owner.key)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    for path in (
        "/",
        "/web/session?name=checkout-redesign",
        "/web/versions?name=checkout-redesign",
        "/web/keys",
    ):
        page.goto(base + path)
        unlabelled = page.evaluate(
            """() => [...document.querySelectorAll('input:not([type=hidden]), select, button')]
                 .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                               && !el.textContent.trim())
                 .map(el => el.outerHTML)"""
        )
        assert unlabelled == [], (path, unlabelled)
        assert page.locator("main h1").count() == 1


def test_a_forged_csrf_token_is_refused_and_changes_nothing(server, owner, page: Page) -> None:
    base = server.url.removesuffix("/mcp")
    spare, prefix = accounts.create_key(admin_db(), owner.id, "spare", ("read",))
    sign_in(page, base, owner.key)
    page.goto(base + "/web/keys")
    page.get_by_role("button", name=f"Revoke key {prefix}").click()
    page.locator("input[name=csrf]").last.evaluate("el => { el.value = 'forged' + el.value.slice(6) }")
    page.get_by_role("button", name=f"Revoke {prefix}").click()
    assert "expired or was not sent from this page" in page.inner_text("main")
    assert tool_result(server.url, spare, "list_sessions")["isError"] is False  # still works


def test_another_origin_can_neither_frame_the_view_nor_post_its_forms(server, owner, page: Page) -> None:
    base = server.url.removesuffix("/mcp")
    spare, prefix = accounts.create_key(admin_db(), owner.id, "spare", ("read",))
    sign_in(page, base, owner.key)
    page.goto(base + "/web/keys")
    key_id = page.locator(
        f"form:has(button[aria-label='Revoke key {prefix}']) input[name=key]"
    ).get_attribute("value")
    token = page.locator("form.signout input[name=csrf]").get_attribute("value")
    harmless = "<p id='harmless'>framed fine</p>"
    framing = (
        f"<iframe id='view' src='{base}/web/keys' width='600' height='400'></iframe>"
        "<iframe id='control' src='/harmless' width='300' height='100'></iframe>"
    )
    # Even holding a valid token (stolen, say), a foreign page's post is refused: Origin, and
    # SameSite=Strict keeps the session cookie off it anyway.
    posting = (
        f"<form id='f' method='post' action='{base}/web/keys/revoke'>"
        f"<input name='csrf' value='{token}'><input name='key' value='{key_id}'>"
        "<input name='step' value='revoke'><button id='go'>go</button></form>"
    )
    with LocalSite({"/attack": framing, "/harmless": harmless, "/post": posting}) as other:
        page.goto(f"{other.origin}/attack", wait_until="load")
        assert page.frame_locator("#control").locator("#harmless").inner_text() == "framed fine"
        view = page.query_selector("#view").content_frame()
        assert (
            view is not None and view.query_selector("table") is None and view.query_selector("form") is None
        )
        page.goto(f"{other.origin}/post")
        page.click("#go")
        page.wait_for_load_state()
        assert "another site" in page.content() or "Refused" in page.content()
    assert tool_result(server.url, spare, "list_sessions")["isError"] is False


def test_a_person_makes_a_key_in_the_browser_asked_first_and_shown_once(server, runtime, page: Page) -> None:
    """Keys page -> label and scopes -> "Make a key…" -> the question -> "Make the key" -> the key,
    once; it works at once over /mcp, and the list shows its prefix, never the key."""
    user, base = make_user(runtime), server.url.removesuffix("/mcp")
    sign_in(page, base, user.key)
    page.get_by_role("link", name="Keys").click()
    page.get_by_label("Label (what it is for)").fill("phone")
    page.get_by_role("checkbox", name="write").uncheck()  # read only
    page.get_by_role("button", name="Make a key…").click()
    expect(page.get_by_role("heading", name="Make this key?")).to_be_visible()
    page.get_by_role("button", name="Make the key").click()
    expect(page.get_by_role("heading", name="Your new key")).to_be_visible()
    key = page.locator("code.key").inner_text()
    assert re.fullmatch(r"sv_live_[A-Za-z0-9_-]{32}", key)
    assert tool_result(server.url, key, "list_sessions")["isError"] is False
    refused = tool_result(server.url, key, "save_session", name="x", summary="y")
    assert refused["isError"] and "scope" in str(refused).lower()  # read only, as chosen
    page.get_by_role("link", name="Back to your keys").click()
    expect(page.get_by_text(key[:12])).to_be_visible()
    assert key not in page.content()
