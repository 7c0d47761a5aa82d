"""Workspaces in the web view, in a real browser (Debian's headless Chromium; docs/teams.md):
the space switcher between a person's own space and each workspace they belong to, a
workspace's sessions and versions, the open handoffs offered to a person across their spaces,
and the members page an owner uses to add a person, change a role and remove one, each through
a confirmation step. A member who is not an owner, and a person who is not a member, get
nothing of it; a forged CSRF token, or a form edited to name a workspace the owner does not
own, changes nothing. No page runs a script. Screenshots go to tests/.artifacts/."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from sessionvault.db import workspaces
from sessionvault.service import accounts

from ..conftest import User, admin_db, make_user
from ..support.jsonrpc import tool_result
from .test_web_view import save, sign_in

REPO = "github.com/acme/checkout"


@dataclass
class Person:
    user: User
    name: str


@dataclass
class Team:
    alice: Person  # owner
    bob: Person  # member
    carol: Person  # not a member
    ws: str
    other: str  # a workspace carol owns and alice is not in


def person(runtime: Any) -> Person:
    user = make_user(runtime)
    with admin_db().identity() as conn:
        name = conn.execute("SELECT name FROM users WHERE id = %s", (user.id,)).fetchone()["name"]
    return Person(user, str(name))


@pytest.fixture
def team(server, runtime) -> Iterator[Team]:
    """Alice owns a workspace Bob is a member of; Carol owns another. Alice offered an incident
    to Bob in the workspace (saved twice), and keeps notes of her own."""
    alice, bob, carol = person(runtime), person(runtime), person(runtime)
    ws, other = f"oncall-{os.urandom(3).hex()}", f"carols-{os.urandom(3).hex()}"
    ws_id = accounts.create_workspace(admin_db(), runtime.keys.provider, ws, alice.user.id)
    workspaces.set_role(admin_db(), ws_id, bob.user.id, "member", add=True)
    accounts.create_workspace(admin_db(), runtime.keys.provider, other, carol.user.id)
    url, key = server.url, alice.user.key
    save(url, key, name="incident/checkout-500s", repo=REPO, workspace=ws, client="claude-code",
         summary="Checkout answers 500 since the deploy.", todos=["Find the failing query"])  # fmt: skip
    save(url, key, name="incident/checkout-500s", repo=REPO, workspace=ws, client="claude-code",
         summary="Rolled back the cache flag; 500s stopped.", todos=["Find why the cache flag breaks it"],
         to_person=bob.name)  # fmt: skip
    save(url, key, name="my-own-notes", repo="github.com/acme/notes", summary="Alice's own notes.")
    yield Team(alice, bob, carol, ws, other)


def signed_in(browser: Browser, base: str, who: Person) -> tuple[BrowserContext, Page]:
    context = browser.new_context()
    context.set_default_timeout(10_000)
    page = context.new_page()
    sign_in(page, base, who.user.key)
    return context, page


def unlabelled(page: Page) -> list[str]:
    found: list[str] = page.evaluate(
        """() => [...document.querySelectorAll('input:not([type=hidden]), select, button')]
             .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                           && !el.textContent.trim())
             .map(el => el.outerHTML)"""
    )
    return found


def can_list(server, who: Person, ws: str) -> bool:
    return tool_result(server.url, who.user.key, "list_sessions", workspace=ws)["isError"] is False


def test_an_owner_switches_spaces_reads_a_workspace_and_manages_its_members(
    server, team: Team, browser: Browser, artifacts: Path
) -> None:
    base = server.url.removesuffix("/mcp")
    ws, bob, carol = team.ws, team.bob, team.carol
    context, page = signed_in(browser, base, team.alice)
    scripts: list[str] = []
    page.on("console", lambda m: scripts.append(m.text))

    # The switcher: her own space first (shown), then the workspace, with her role.
    spaces = page.get_by_role("navigation", name="Spaces")
    expect(spaces.get_by_role("link", name="Personal")).to_have_attribute("aria-current", "page")
    expect(spaces).to_contain_text(f"{ws} (owner)")
    expect(page.get_by_role("link", name="my-own-notes")).to_be_visible()
    assert page.get_by_role("link", name="incident/checkout-500s").count() == 0
    spaces.get_by_role("link", name=ws, exact=True).click()
    expect(spaces.get_by_role("link", name=ws, exact=True)).to_have_attribute("aria-current", "page")
    assert page.get_by_role("link", name="my-own-notes").count() == 0
    page.screenshot(path=str(artifacts / "web-workspace-sessions.png"), full_page=True)

    # A workspace session, its handoff to Bob, and its versions, all inside the workspace.
    page.get_by_role("link", name="incident/checkout-500s").click()
    main = page.locator("main")
    expect(main).to_contain_text(f"In workspace {ws}")
    expect(main).to_contain_text(f"to {bob.name} from {team.alice.name}")
    expect(main).to_contain_text("version 2 of 2")
    page.get_by_role("link", name="Compare two versions").click()
    expect(main).to_contain_text("Changes from version 1 to version 2")
    assert any("Rolled back the cache flag" in t for t in page.locator("li.add").all_inner_texts())
    page.get_by_role("link", name="version 1", exact=True).click()
    expect(main).to_contain_text("Checkout answers 500 since the deploy.")

    # The members page: add Carol as a reader, through the confirmation step.
    page.goto(base + "/")
    page.get_by_role("link", name=f"Members of {ws}").click()
    expect(page.get_by_role("heading", name=f"Members of {ws}")).to_be_visible()
    assert unlabelled(page) == []
    page.screenshot(path=str(artifacts / "web-members.png"), full_page=True)
    page.get_by_label("User name").fill(carol.name)
    page.get_by_label("Role", exact=True).select_option("reader")
    page.get_by_role("button", name="Add…").click()
    expect(page.get_by_role("heading", name="Add this person?")).to_be_visible()
    page.screenshot(path=str(artifacts / "web-members-confirm.png"), full_page=True)
    assert not can_list(server, carol, ws)  # asking changed nothing
    page.get_by_role("button", name=f"Add {carol.name} as reader").click()
    expect(page.get_by_role("status")).to_have_text(f"{carol.name} was added as reader.")
    assert can_list(server, carol, ws)  # her next call gets in
    assert tool_result(server.url, carol.user.key, "save_session", name="x", summary="x", workspace=ws)[
        "isError"
    ]  # a reader

    # Make Carol a member, by keyboard.
    page.get_by_label(f"New role of {carol.name}").select_option("member")
    page.get_by_role("button", name=f"Change the role of {carol.name}").focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Change this role?")).to_be_visible()
    page.get_by_role("button", name=f"Make {carol.name} member").click()
    expect(page.get_by_role("status")).to_have_text(f"{carol.name} is now member.")
    saved = tool_result(server.url, carol.user.key, "save_session", name="x", summary="x", workspace=ws)
    assert saved["isError"] is False

    # Remove her: the question first, then her next call finds nothing.
    page.get_by_role("button", name=f"Remove {carol.name}").click()
    expect(page.get_by_role("heading", name="Remove this person?")).to_be_visible()
    assert can_list(server, carol, ws)
    page.get_by_role("button", name=f"Remove {carol.name}").click()
    expect(page.get_by_role("status")).to_contain_text(f"{carol.name} was removed")
    assert not can_list(server, carol, ws)
    rows = page.locator("main table tbody tr").all_inner_texts()
    assert len(rows) == 2 and not any(carol.name in r for r in rows), rows

    assert scripts == []
    context.close()


def test_handoffs_to_me_across_spaces_and_nothing_for_anyone_else(
    server, team: Team, browser: Browser, artifacts: Path
) -> None:
    base = server.url.removesuffix("/mcp")
    ws = team.ws
    save(
        server.url, team.bob.user.key, name="bobs-own", repo="github.com/acme/bob", summary="b", handoff=True
    )
    context, page = signed_in(browser, base, team.bob)
    page.get_by_role("link", name="Handoffs").click()
    to_you = page.get_by_role("region", name="Open handoffs to you")
    rows = to_you.locator("tbody tr").all_inner_texts()
    assert any(
        "incident/checkout-500s" in r and ws in r and f"you, from {team.alice.name}" in r for r in rows
    )
    assert any("bobs-own" in r and "personal" in r for r in rows), rows
    page.screenshot(path=str(artifacts / "web-handoffs-to-me.png"), full_page=True)
    to_you.get_by_role("link", name="incident/checkout-500s").click()
    expect(page.locator("main")).to_contain_text(f"In workspace {ws}")
    # A member is not an owner: no members page, and the answer names the role.
    reply = page.goto(f"{base}/web/members?workspace={ws}")
    assert reply is not None and reply.status == 403
    expect(page.locator("main")).to_contain_text("only its owners manage its members")
    assert page.get_by_role("link", name=f"Members of {ws}").count() == 0
    context.close()

    # Carol, not a member: the workspace reads as one that does not exist, on every page.
    context, page = signed_in(browser, base, team.carol)
    expect(page.get_by_role("navigation", name="Spaces")).not_to_contain_text(ws)
    answers = []
    for name in (ws, f"no-such-{os.urandom(3).hex()}"):
        for path in (
            "/?workspace=",
            "/web/members?workspace=",
            "/web/session?name=incident/checkout-500s&workspace=",
        ):
            reply = page.goto(base + path + name)
            assert reply is not None and reply.status == 404, path
            answers.append(page.inner_text("main").replace(name, "NAME"))
    assert answers[:3] == answers[3:]
    page.get_by_role("link", name="Handoffs").click()
    assert "incident/checkout-500s" not in page.inner_text("main")
    context.close()


def test_a_form_naming_another_workspace_or_a_forged_token_changes_nothing(
    server, team: Team, browser: Browser
) -> None:
    base = server.url.removesuffix("/mcp")
    context, page = signed_in(browser, base, team.alice)
    page.goto(f"{base}/web/members?workspace={team.ws}")
    page.get_by_role("button", name=f"Remove {team.bob.name}").click()
    # The owner edits the form to name Carol's workspace (and Carol): refused as not hers.
    page.locator("main form input[name=workspace]").evaluate(f"el => {{ el.value = '{team.other}' }}")
    page.locator("main form input[name=person]").evaluate(f"el => {{ el.value = '{team.carol.name}' }}")
    with page.expect_navigation():
        page.get_by_role("button", name=f"Remove {team.bob.name}").click()
    expect(page.locator("main")).to_contain_text(f"no workspace named '{team.other}' that you belong to")
    other_id = workspaces.find(admin_db(), team.other)
    assert [m["name"] for m in workspaces.members(admin_db(), other_id)] == [team.carol.name]
    # A forged CSRF token: refused, Bob stays.
    page.goto(f"{base}/web/members?workspace={team.ws}")
    page.get_by_role("button", name=f"Remove {team.bob.name}").click()
    page.locator("main form input[name=csrf]").evaluate("el => { el.value = 'forged' + el.value.slice(6) }")
    page.get_by_role("button", name=f"Remove {team.bob.name}").click()
    assert "expired or was not sent from this page" in page.inner_text("main")
    assert can_list(server, team.bob, team.ws)
    context.close()
