"""The clients page in Chromium: a client's checkpoint and a handoff claimed by another client
draw as an inline SVG (nodes, an arrow with its count) that the browser lays out, with no
script run and the CSP unchanged; a hostile client name shows as text. A screenshot of the page
goes to tests/.artifacts/ (docs/images/clients-page.png is one such, for docs/web.md)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import BrowserContext, Page, expect

from ..conftest import hook_key, make_user
from ..support.jsonrpc import post, tool_result
from .test_web_view import save, sign_in

REPO = "github.com/acme/widget"
HOSTILE = '<img src=x onerror="document.title=1"></svg><script>document.title=2</script>'


def test_the_clients_page_draws_the_handoffs_without_script(
    server, runtime, page: Page, context: BrowserContext, artifacts: Path
) -> None:
    user, url = make_user(runtime), server.url
    base = url.removesuffix("/mcp")
    save(url, user.key, name="cart", repo=REPO, client="claude-code", summary="Cart totals.", handoff=True)
    tool_result(url, user.key, "load_session", repo=REPO, accept=True, client="codex")
    save(url, user.key, name="cart", repo=REPO, client="codex", summary="Coupons next.", handoff=True)
    tool_result(url, user.key, "load_session", repo=REPO, accept=True, client="gemini-cli")
    save(url, user.key, name="cart", repo=REPO, client="gemini-cli", summary="Back to you.", handoff=True)
    tool_result(url, user.key, "load_session", repo=REPO, accept=True, client="claude-code")
    save(url, user.key, name="infra", repo=REPO, client=HOSTILE, summary="x", to_client="codex")
    hooks = hook_key(user)
    for client in ("claude-code", "codex"):
        tool_result(url, hooks, "checkpoint_session", name=f"auto/{client}/s1", summary="s", client=client)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    sign_in(page, base, user.key)
    with page.expect_response(lambda r: r.url.endswith("/web/clients")) as answered:
        page.get_by_role("link", name="Clients").click()
    assert "default-src 'none'" in (answered.value.headers.get("content-security-policy") or "")
    expect(page.get_by_role("heading", name="Clients", level=1)).to_be_visible()
    picture = page.locator("svg.flow")
    expect(picture).to_be_visible()
    box = picture.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 200  # laid out, not collapsed
    assert picture.locator("g.node").count() == 4  # three clients in a ring and the hostile one
    assert sorted(picture.locator("g.edge text").all_text_contents()) == ["1", "1", "1", "1"]
    expect(page.get_by_role("cell", name="claude-code", exact=True)).to_be_visible()
    expect(page.get_by_text(HOSTILE + " → codex: 1")).to_be_visible()  # the name, as text
    assert page.evaluate("document.scripts.length") == 0  # the page may run script only in a test's evaluate
    assert page.title() == "Clients · SessionVault" and page.locator("img").count() == 0
    assert not errors, errors
    page.screenshot(path=str(artifacts / "web-clients.png"), full_page=True)


def test_activity_folds_protocol_messages_and_charts_calls_per_day(
    server, runtime, page: Page, artifacts: Path
) -> None:
    user, url = make_user(runtime), server.url
    for method in ("initialize", "tools/list"):  # what a client sends before its work
        post(url, user.key, method, {} if method == "tools/list" else None)
    save(url, user.key, name="cart", repo=REPO, client="codex", summary="s")
    sign_in(page, url.removesuffix("/mcp"), user.key)
    page.get_by_role("link", name="Activity").click()
    chart = page.locator("svg.bars")
    expect(chart).to_be_visible()
    box = chart.bounding_box()
    assert box is not None and box["height"] < 120  # one day's bar is drawn small, not page-high
    folded = page.locator("tr.protocol details")
    expect(folded).to_have_count(1)
    assert "initialize" in folded.inner_text() and not folded.locator("li").first.is_visible()
    folded.locator("summary").click()  # opens without script
    expect(folded.locator("li").first).to_be_visible()
    assert page.evaluate("document.scripts.length") == 0
    page.screenshot(path=str(artifacts / "web-activity-grouped.png"), full_page=True)
