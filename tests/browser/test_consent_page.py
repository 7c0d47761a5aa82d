"""The consent page in a real browser (Debian's headless Chromium): a registered client sends the
owner to /authorize, the browser lands on the consent page, the owner pastes a key and approves,
and the browser follows the redirect to the client's loopback callback with a code that the
client exchanges for a token that works on /mcp. Also: deny, and a page of another origin that
tries to frame the consent page."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import httpx2
import pytest
from playwright.sync_api import Page

from sessionvault.core.oauth import resource_url

from ..support import oauth as flow
from .site import LocalSite

CLIENT_NAME = "Browser Test Client"


@pytest.fixture
def callback() -> Iterator[LocalSite]:
    """The OAuth client's side: its loopback redirect target, recording what arrives."""
    with LocalSite() as site:
        yield site


def authorize_url(base: str, client: flow.Registered, challenge: str, state: str) -> str:
    params = flow.authorize_params(client, challenge, state, scope="read write", resource=resource_url(base))
    return f"{base}/authorize?{urlencode(params)}"


def open_consent(page: Page, base: str, client: flow.Registered) -> tuple[str, str]:
    """Start an authorization in the browser; it lands on the consent page. (state, verifier)"""
    verifier, challenge = flow.pkce()
    state = secrets.token_urlsafe(16)
    page.goto(authorize_url(base, client, challenge, state))
    assert urlsplit(page.url).path == "/consent", page.url
    return state, verifier


def test_the_owner_approves_in_a_browser_and_the_client_gets_a_working_token(
    server, user, page: Page, callback: LocalSite, http: httpx2.Client, artifacts: Path, capfd
) -> None:
    base = flow.base_of(server.url)
    redirect_uri = f"{callback.origin}/callback"
    client = flow.register(http, base, (redirect_uri,), name=CLIENT_NAME)
    state, verifier = open_consent(page, base, client)

    text = page.inner_text("body")
    assert CLIENT_NAME in text
    assert urlsplit(redirect_uri).netloc in text  # the host the browser will be sent back to
    assert "read" in text and "write" in text and "delete" not in text  # the scopes asked for
    shot = artifacts / "consent-page.png"
    page.screenshot(path=str(shot), full_page=True)

    page.fill("input[name=api_key]", user.key)
    with page.expect_navigation(url=f"{redirect_uri}**"):
        page.click("button[value=approve]")

    (arrived,) = callback.visits_to("/callback")
    assert arrived["state"] == [state]
    assert "error" not in arrived
    (code,) = arrived["code"]
    assert user.key not in page.url  # the key travelled in the form's body only

    pending = flow.Pending("", "", redirect_uri, state, verifier)
    reply = flow.exchange(http, base, client, code, pending)
    assert reply.status_code == 200, reply.text
    tokens = reply.json()
    assert tokens["access_token"].startswith("sv_at_")
    assert sorted(tokens["scope"].split()) == ["read", "write"]

    listed = flow.list_tools(http, server.url, tokens["access_token"])
    assert listed.status_code == 200, listed.text
    names = {tool["name"] for tool in listed.json()["result"]["tools"]}
    assert {"save_session", "load_session", "list_sessions"} <= names
    assert not any(name.startswith("delete") for name in names)  # a read+write token

    logged = capfd.readouterr().out
    assert "oauth/consent" in logged  # the server's log lines were captured...
    assert user.key not in logged and tokens["access_token"] not in logged  # ...without secrets
    print(f"consent page screenshot: {shot}")  # after readouterr: shown with -s or -rP


def test_a_deny_click_lands_at_the_redirect_uri_with_access_denied(
    server, page: Page, callback: LocalSite, http: httpx2.Client
) -> None:
    base = flow.base_of(server.url)
    redirect_uri = f"{callback.origin}/callback"
    client = flow.register(http, base, (redirect_uri,), name=CLIENT_NAME)
    state, _ = open_consent(page, base, client)

    with page.expect_navigation(url=f"{redirect_uri}**"):
        page.click("button[value=deny]")  # no key typed: deny needs none

    (arrived,) = callback.visits_to("/callback")
    assert arrived["error"] == ["access_denied"]
    assert arrived["state"] == [state]
    assert "code" not in arrived


def test_a_page_of_another_origin_cannot_frame_the_consent_page(
    server, page: Page, http: httpx2.Client
) -> None:
    base = flow.base_of(server.url)
    client = flow.register(http, base, name=CLIENT_NAME)
    consent_url = flow.start(http, base, client).consent_url

    # The same page frames a harmless one too: proof that framing itself works here, so an
    # empty consent frame means the browser refused it, not that frames never load.
    harmless = "<p id='harmless'>framed fine</p>"
    framing = (
        f"<iframe id='consent' src='{consent_url}' width='600' height='400'></iframe>"
        "<iframe id='control' src='/harmless' width='300' height='100'></iframe>"
    )
    with LocalSite({"/attack": framing, "/harmless": harmless}) as other:
        assert urlsplit(other.origin).netloc != urlsplit(base).netloc  # another origin (port)
        page.goto(f"{other.origin}/attack", wait_until="load")
        control = page.frame_locator("#control")
        assert control.locator("#harmless").inner_text() == "framed fine"
        consent = page.query_selector("#consent").content_frame()
        assert consent is not None
        assert consent.query_selector("input[name=api_key]") is None
        assert consent.query_selector("form") is None
        assert CLIENT_NAME not in (consent.content() or "")

    page.goto(consent_url)  # and the very same URL, opened on its own, does show the form
    assert page.query_selector("input[name=api_key]") is not None
