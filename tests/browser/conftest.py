"""A real browser for the pages people click through: Debian's headless Chromium driven by
Playwright over its pipe. Playwright's own browser builds are never used: nothing may download
at test time, so its browser path points at a folder that does not exist, and `make test`
installs the `chromium` package (the Makefile's DEBS) before the tests run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Before playwright starts its driver: a downloaded browser, were one lying around, is never found.
os.environ["PLAYWRIGHT_BROWSERS_PATH"] = "/nonexistent/sessionvault-no-downloaded-browsers"

from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
# Headless as root (CI) needs --no-sandbox; the rest keeps Chromium off the network on its own
# (updates, sync, QUIC probes) so the only traffic is the test's.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / ".artifacts"


def browser_required() -> bool:
    """`make test` and CI must run the browser tier: a test that always skips is a defect."""
    return bool(os.environ.get("CI")) or os.environ.get("SESSIONVAULT_REQUIRE_BROWSER") == "1"


# Package scope, not session: while sync_playwright is open, its asyncio loop runs on the main
# thread, and every later test that runs a loop there (Mangum, anyio) would fail with "This
# event loop is already running". Closing it when the browser tests are done frees the thread.
@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        reason = f"{CHROMIUM} is missing: `make system-packages` installs Debian's chromium"
        if browser_required():
            pytest.fail(reason)
        pytest.skip(reason)
    with sync_playwright() as p:
        # launch() gives every run a fresh temporary profile (user-data-dir) and removes it after.
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """One test's cookies and storage, gone after it."""
    ctx = browser.new_context()
    ctx.set_default_timeout(10_000)  # local pages: a wait this long is a failure, not slowness
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
