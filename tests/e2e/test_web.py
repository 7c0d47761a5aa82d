"""The web view (`server/web/`) over real HTTP against the real server, as a browser would use it
(cookies and forms by hand, so that every header can be checked): sign in, the pages, the diff,
revoking a key with its confirmation, sign-out; and every refusal: a forged or missing CSRF
token, a foreign Origin or Sec-Fetch-Site, a wrong Content-Type, a tampered or stale cookie, a
key without the scope. Saved text is escaped everywhere; the key is never in a URL, a cookie, a
page or a log line."""

from __future__ import annotations

import html
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest

from sessionvault.core import apikeys

from ..conftest import admin_db, make_user
from ..support.jsonrpc import tool_result

REPO = "github.com/acme/web"
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Browser:
    """Just enough of a browser: a cookie jar, same-origin form posts, no redirects followed."""

    http: httpx2.Client
    base: str
    jar: dict[str, str] = field(default_factory=dict)
    set_cookies: list[str] = field(default_factory=list)

    def _keep(self, reply: httpx2.Response) -> httpx2.Response:
        self.http.cookies.clear()  # this jar only: the client's own would mix browsers up
        for line in reply.headers.get_list("set-cookie"):
            self.set_cookies.append(line)
            name, _, rest = line.partition("=")
            value = rest.split(";", 1)[0]
            if "Max-Age=0" in line:
                self.jar.pop(name, None)
            else:
                self.jar[name] = value
        return reply

    def _cookie(self) -> dict[str, str]:
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.jar.items())} if self.jar else {}

    def get(self, path: str, **params: Any) -> httpx2.Response:
        return self._keep(self.http.get(self.base + path, params=params or None, headers=self._cookie()))

    def post(self, path: str, data: dict[str, str], **headers: str) -> httpx2.Response:
        sent = {"Origin": self.base, "Sec-Fetch-Site": "same-origin", **self._cookie(), **headers}
        sent = {k: v for k, v in sent.items() if v}
        return self._keep(self.http.post(self.base + path, data=data, headers=sent))

    def sign_in(self, key: str) -> httpx2.Response:
        page = self.get("/")
        assert page.status_code == 200, page.text
        return self.post("/web/signin", {"csrf": csrf_of(page), "api_key": key})


def csrf_of(reply: httpx2.Response) -> str:
    found = CSRF.search(reply.text)
    assert found, reply.text
    return html.unescape(found[1])


def text_of(reply: httpx2.Response) -> str:
    """The page's text, tags dropped and entities decoded (what a person reads)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", reply.text)).split())


@pytest.fixture
def browser(server, http: httpx2.Client) -> Browser:
    return Browser(http, server.url.removesuffix("/mcp"))


def save(url: str, key: str, **args: Any) -> dict[str, Any]:
    out = tool_result(url, key, "save_session", **args)
    assert not out["isError"], out
    return out["structuredContent"]


def assert_page_headers(reply: httpx2.Response) -> None:
    csp = reply.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "script-src" not in csp
    assert "form-action 'self'" in csp and "base-uri 'none'" in csp
    assert reply.headers["x-frame-options"] == "DENY"
    assert reply.headers["cache-control"] == "no-store"
    assert reply.headers["x-content-type-options"] == "nosniff"


def test_sign_in_browse_diff_and_sign_out(server, runtime, browser: Browser, capfd) -> None:
    user = make_user(runtime)
    save(server.url, user.key, name="plan", summary="first cut", repo=REPO, plan=["a", "b"], client="cursor")
    save(
        server.url,
        user.key,
        name="plan",
        summary="second cut",
        repo=REPO,
        plan=["a", "c"],
        decisions=[{"decision": "use JWT", "reason": "stateless"}],
        todos=["ship"],
        files=["src/app.py"],
        errors=["E1"],
        tried=["retry: no luck"],
        client="codex",
    )
    save(server.url, user.key, name="other", summary="elsewhere", repo="github.com/acme/other")

    signin = browser.get("/")
    assert signin.status_code == 200 and 'name="api_key"' in signin.text
    assert_page_headers(signin)
    (pre,) = [c for c in browser.set_cookies if c.startswith("sv_web_signin=")]
    assert "HttpOnly" in pre and "SameSite=Strict" in pre and "Secure" not in pre  # http: no Secure

    signed = browser.post("/web/signin", {"csrf": csrf_of(signin), "api_key": user.key})
    assert signed.status_code == 303 and signed.headers["location"] == "/"
    (session_cookie,) = [c for c in browser.set_cookies if c.startswith("sv_web=")]
    assert "HttpOnly" in session_cookie and "SameSite=Strict" in session_cookie
    assert "Max-Age=1800" in session_cookie and "Path=/" in session_cookie
    assert user.key not in session_cookie and user.key[8:] not in session_cookie

    home = browser.get("/")
    assert home.status_code == 200
    assert_page_headers(home)
    text = text_of(home)
    assert REPO in text and "github.com/acme/other" in text and "plan" in text and "Sign out" in text
    assert text.index("github.com/acme/other") < text.index(REPO)  # the newest repo first

    only = browser.get("/", repo=REPO)
    assert "elsewhere" not in text_of(only) and "second cut" in text_of(only)
    found = browser.get("/", q="elsewhere")
    assert "other" in text_of(found) and "Semantic search is unavailable" in text_of(found)

    page = browser.get("/web/session", name="plan")
    text = text_of(page)
    for expected in (
        "second cut",
        "use JWT",
        "Because: stateless",
        "ship",
        "src/app.py",
        "E1",
        "retry: no luck",
    ):
        assert expected in text
    assert "version 2 of 2" in text
    first = text_of(browser.get("/web/session", name="plan", version="1"))
    assert "first cut" in first and "version 1 of 2" in first

    diff = browser.get("/web/versions", name="plan", a="1", b="2")
    assert diff.status_code == 200
    assert "<del>- first cut</del>" in diff.text and "<ins>+ second cut</ins>" in diff.text
    assert "<del>- 2. b</del>" in diff.text and "<ins>+ 2. c</ins>" in diff.text
    assert "<li>  1. a</li>" in diff.text  # unchanged
    assert "Added:" in diff.text and "Removed:" in diff.text  # spelled out for screen readers
    assert browser.get("/web/versions", name="plan", a="1", b="9").status_code == 400
    assert browser.get("/web/session", name="nope").status_code == 404

    out = browser.post("/web/signout", {"csrf": csrf_of(home)})
    assert out.status_code == 303 and "sv_web" not in browser.jar
    assert browser.get("/web/keys").status_code == 303  # signed out: back to the sign-in page
    logged = capfd.readouterr()
    assert user.key not in logged.out + logged.err


def test_saved_text_is_escaped_on_every_page(server, runtime, browser: Browser) -> None:
    user = make_user(runtime)
    name = f"x{HOSTILE}"
    save(
        server.url,
        user.key,
        name=name,
        summary=HOSTILE,
        repo=REPO,
        plan=[HOSTILE],
        decisions=[{"decision": HOSTILE, "reason": HOSTILE}],
        todos=[HOSTILE],
        files=[HOSTILE],
        client=HOSTILE[:50],
        to_client=HOSTILE[:60],
    )
    save(server.url, user.key, name=name, summary=HOSTILE + "2", repo=REPO)
    browser.sign_in(user.key)
    pages = [
        browser.get("/"),
        browser.get("/", q=HOSTILE),
        browser.get("/web/session", name=name),
        browser.get("/web/session", name=name, version="1"),
        browser.get("/web/versions", name=name),
        browser.get("/web/handoffs"),
        browser.get("/web/session", name=HOSTILE),  # a 404 that names what was asked for
    ]
    for reply in pages:
        assert "<script>" not in reply.text and "<img" not in reply.text, reply.url
    assert HOSTILE in text_of(pages[2])  # shown, as text
    assert pages[-1].status_code == 404


def test_handoffs_show_open_claimed_by_whom_and_expired(server, runtime, browser: Browser) -> None:
    user = make_user(runtime)
    save(server.url, user.key, name="taken", summary="s", repo=REPO, handoff=True, client="cursor")
    tool_result(server.url, user.key, "load_session", repo=REPO, accept=True, client="codex")
    save(server.url, user.key, name="stale", summary="s", repo="github.com/acme/stale", handoff=True)
    with admin_db().tenant(user.id) as conn:
        conn.execute(
            "UPDATE handoffs SET expires_at = now() - interval '1 hour' WHERE user_id = %s AND repo = %s",
            (user.id, "github.com/acme/stale"),
        )
    save(server.url, user.key, name="waiting", summary="s", repo=REPO, to_client="gemini")
    browser.sign_in(user.key)
    text = text_of(browser.get("/web/handoffs"))
    assert re.search(r"taken .* accepted +by +codex +\(with +" + re.escape(user.key[:12]), text), text
    assert re.search(r"stale .* expired", text) and re.search(r"waiting .* open +to +gemini", text)


def test_activity_shows_what_the_audit_trail_holds(server, runtime, browser: Browser) -> None:
    user = make_user(runtime)
    save(server.url, user.key, name="a", summary="s")
    tool_result(server.url, user.key, "delete_session", name="missing")
    browser.sign_in(user.key)
    text = text_of(browser.get("/web/activity"))
    assert "save_session" in text and "web/signin" in text and "web/activity" in text
    assert "API key" in text and "ok" in text
    assert user.key not in text


def test_revoking_a_key_asks_first_and_needs_the_delete_scope(
    server, runtime, browser: Browser, http
) -> None:
    owner = make_user(runtime)  # read, write, delete
    other_key, other_prefix = _another_key(owner.id, ("read", "write"))
    browser.sign_in(owner.key)
    keys = browser.get("/web/keys")
    text = text_of(keys)
    assert owner.key[:12] in text and other_prefix in text and "(you are signed in with it)" in text
    assert owner.key not in keys.text and other_key not in keys.text
    key_id = _key_id(keys.text, other_prefix)
    csrf = csrf_of(keys)

    asked = browser.post("/web/keys/revoke", {"csrf": csrf, "key": key_id, "step": "confirm"})
    assert asked.status_code == 200 and "Revoke this key?" in asked.text
    assert tool_result(server.url, other_key, "list_sessions")["isError"] is False  # asking changed nothing

    done = browser.post("/web/keys/revoke", {"csrf": csrf, "key": key_id, "step": "revoke"})
    assert done.status_code == 303 and done.headers["location"] == f"/web/keys?revoked={other_prefix}"
    after = text_of(browser.get(done.headers["location"]))
    assert f"Key {other_prefix} was revoked." in after
    reply = http.post(
        server.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {other_key}", "Accept": "application/json, text/event-stream"},
    )
    assert reply.status_code == 401  # revoked for /mcp too
    again = browser.post("/web/keys/revoke", {"csrf": csrf, "key": key_id, "step": "revoke"})
    assert again.status_code == 404

    # A read,write key sees its keys but no revoke button, and a forged post is refused.
    reader = Browser(browser.http, browser.base)
    reader.sign_in(other_key_for_reading := _another_key(owner.id, ("read", "write"))[0])
    listed = reader.get("/web/keys")
    assert "Revoke…" not in listed.text and "needs the <code>delete</code> scope" in listed.text
    refused = reader.post(
        "/web/keys/revoke", {"csrf": csrf_of(listed), "key": _key_id_any(owner), "step": "revoke"}
    )
    assert refused.status_code == 403 and "'delete' scope" in html.unescape(refused.text)
    assert tool_result(server.url, owner.key, "list_sessions")["isError"] is False
    assert other_key_for_reading


def test_revoking_the_key_you_are_signed_in_with_signs_you_out(server, runtime, browser: Browser) -> None:
    owner = make_user(runtime)
    browser.sign_in(owner.key)
    keys = browser.get("/web/keys")
    key_id = _key_id(keys.text, owner.key[:12])
    done = browser.post("/web/keys/revoke", {"csrf": csrf_of(keys), "key": key_id, "step": "revoke"})
    assert done.status_code == 200 and "the key you were signed in with" in done.text
    assert "sv_web" not in browser.jar
    assert browser.get("/web/keys").status_code == 303


def test_forms_are_refused_without_their_token_origin_or_type(server, runtime, browser: Browser) -> None:
    owner = make_user(runtime)
    _, prefix = _another_key(owner.id, ("read",))
    browser.sign_in(owner.key)
    keys = browser.get("/web/keys")
    good = {"csrf": csrf_of(keys), "key": _key_id(keys.text, prefix), "step": "revoke"}
    forged = browser.post("/web/keys/revoke", {**good, "csrf": "A" * 43})
    assert forged.status_code == 403 and "expired or was not sent from this page" in forged.text
    missing = browser.post("/web/keys/revoke", {k: v for k, v in good.items() if k != "csrf"})
    assert missing.status_code == 403
    foreign = browser.post("/web/keys/revoke", good, Origin="https://attacker.example")
    assert foreign.status_code == 403 and "another site" in foreign.text
    cross = browser.post("/web/keys/revoke", good, **{"Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403
    null = browser.post("/web/keys/revoke", good, Origin="null")
    assert null.status_code == 403
    plain = browser.http.post(
        browser.base + "/web/keys/revoke",
        content="csrf=x",
        headers={"Content-Type": "text/plain", "Origin": browser.base, **browser._cookie()},
    )
    assert plain.status_code == 415
    # another session's token is not this session's
    second = Browser(browser.http, browser.base)
    second.sign_in(owner.key)
    theirs = csrf_of(second.get("/web/keys"))
    assert browser.post("/web/keys/revoke", {**good, "csrf": theirs}).status_code == 403
    # every one of those left the key alone
    assert "revoked" not in text_of(browser.get("/web/keys")).split(prefix, 1)[1].split("Action")[0][:60]


def test_a_form_must_carry_a_browsers_proof_that_our_page_sent_it(server, runtime, browser: Browser) -> None:
    """docs/security.md: `Sec-Fetch-Site: same-origin`, or, where a browser sends no fetch
    metadata (plain http to an address that is not loopback), our own Origin. A POST carrying
    neither was accepted."""
    owner = make_user(runtime)
    _, prefix = _another_key(owner.id, ("read",))
    browser.sign_in(owner.key)
    keys = browser.get("/web/keys")
    ask = {"csrf": csrf_of(keys), "key": _key_id(keys.text, prefix), "step": "confirm"}
    no_metadata = {"Sec-Fetch-Site": ""}  # an empty header is not sent (Browser.post)
    bare = browser.post("/web/keys/revoke", ask, Origin="", **no_metadata)
    assert bare.status_code == 403 and "without the headers a browser sends" in bare.text
    # a current browser, to https or a loopback address: fetch metadata (and Origin, but it may not)
    assert browser.post("/web/keys/revoke", ask, Origin="").status_code == 200
    # a browser to plain http on a LAN address: no fetch metadata, but its Origin on every POST
    assert browser.post("/web/keys/revoke", ask, **no_metadata).status_code == 200


def test_sign_in_refuses_a_bad_key_a_missing_token_and_a_foreign_page(
    server, runtime, browser: Browser
) -> None:
    owner = make_user(runtime)
    page = browser.get("/")
    bad = browser.post("/web/signin", {"csrf": csrf_of(page), "api_key": "sv_live_" + "A" * 32})
    assert bad.status_code == 200 and "That key was not accepted." in bad.text and "sv_web" not in browser.jar
    junk = browser.post("/web/signin", {"csrf": csrf_of(page), "api_key": "not a key"})
    assert "That key was not accepted." in junk.text
    # a cross-site page posting a sign-in form: no pre-sign-in cookie (SameSite=Strict), no token
    stranger = Browser(browser.http, browser.base)
    forged = stranger.post("/web/signin", {"csrf": csrf_of(page), "api_key": owner.key}, Origin="")
    assert forged.status_code == 403 and "sv_web" not in stranger.jar
    assert browser.post("/web/signin", {"csrf": "x", "api_key": owner.key}).status_code == 403
    writer = make_user(runtime, scopes=("write",))
    refused = browser.sign_in(writer.key)
    assert refused.status_code == 200 and "lacks the read scope" in refused.text
    assert "sv_web" not in browser.jar


def test_a_tampered_or_revoked_cookie_is_a_signed_out_browser(server, runtime, browser: Browser) -> None:
    owner = make_user(runtime)
    browser.sign_in(owner.key)
    value = browser.jar["sv_web"]
    browser.jar["sv_web"] = value[:-2] + ("AA" if value[-2:] != "AA" else "BB")
    home = browser.get("/")
    assert 'name="api_key"' in home.text and "Your sign-in has ended" in home.text
    browser.jar["sv_web"] = value
    assert "Sign out" in browser.get("/").text
    from sessionvault.service import accounts

    accounts.revoke_key(admin_db(), owner.key)
    after = browser.get("/")
    assert 'name="api_key"' in after.text and "sv_web" not in browser.jar  # cleared


def test_unknown_paths_and_methods(browser: Browser) -> None:
    assert browser.get("/web/nope").status_code == 404
    wrong = browser.http.put(browser.base + "/web/keys")
    assert wrong.status_code == 405 and wrong.headers["allow"] == "GET"
    assert browser.http.post(browser.base + "/").status_code == 405
    assert browser.get("/health").json() == {"ok": True}  # untouched


def test_web_requests_are_audited_under_their_page_names(server, runtime, browser: Browser) -> None:
    owner = make_user(runtime)
    browser.sign_in(owner.key)
    browser.get("/web/handoffs")
    browser.get("/web/session", name="missing")
    expected = [
        ("web/signin", "ok", None),
        ("web/handoffs", "ok", None),
        ("web/session", "error", "validation"),  # the 404's class, set after the answer is sent
    ]
    deadline = time.monotonic() + 5
    while True:
        with admin_db().tenant(owner.id) as conn:
            cur = conn.execute(
                "SELECT tool, outcome, error_class FROM audit_events WHERE user_id = %s ORDER BY id",
                (owner.id,),
            )
        rows = [tuple(r.values()) for r in cur.fetchall()]
        if rows == expected or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert rows == expected


def _another_key(user_id: str, scopes: tuple[str, ...]) -> tuple[str, str]:
    from sessionvault.service import accounts

    return accounts.create_key(admin_db(), user_id, "second", scopes)


def _key_id(page: str, prefix: str) -> str:
    row = page.split(f'<code class="nowrap">{prefix}</code>', 1)[1].split("</tr>", 1)[0]
    found = re.search(r'name="key" value="([0-9a-f-]{36})"', row)
    assert found, row
    return found[1]


def _key_id_any(owner: Any) -> str:
    with admin_db().identity() as conn:
        row = conn.execute(
            "SELECT id::text AS id FROM api_keys WHERE key_hash = %s", (apikeys.digest(owner.key),)
        ).fetchone()
    return str(row["id"])


# --- the MCP App (server/mcp/app_view.py): linked for every host, listed for declaring ones -----

MODERN = "2026-07-28"
UI = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}


def mcp(
    http: httpx2.Client, url: str, key: str, method: str, params: dict[str, Any], capabilities: Any
) -> httpx2.Response:
    """One request: 2025-06-18 when `capabilities` is None (a stateless request declares none),
    else 2026-07-28 with them in the request's _meta envelope."""
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    if capabilities is not None:
        params = {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "web-test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            },
        }
        headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": method})
        if "name" in params or "uri" in params:
            headers["Mcp-Name"] = params.get("name") or params["uri"]
    reply = http.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=headers
    )
    assert reply.status_code == 200, reply.text
    return reply


CALLS = [
    ("tools/list", {}),
    ("tools/call", {"name": "load_session", "arguments": {"name": "app"}}),
    ("tools/call", {"name": "list_sessions", "arguments": {}}),
    ("tools/call", {"name": "search_sessions", "arguments": {"query": "x"}}),
    ("resources/list", {}),
]


@pytest.fixture
def app_switched_off(monkeypatch) -> Any:
    """A function that switches the App off in this process, as the server was before it existed:
    no UI tools, no declaration seen (tools.definitions() is rebuilt, and rebuilt again after)."""
    from sessionvault.server.mcp import resources, tools

    def off() -> None:
        monkeypatch.setattr(tools, "UI_TOOLS", frozenset())
        monkeypatch.setattr(resources, "apps_declared", lambda ctx: False)
        tools.definitions.cache_clear()

    yield off
    monkeypatch.undo()
    tools.definitions.cache_clear()


def _without_link(method: str, params: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """`answer` with the App's link taken out, after checking it is exactly the link, where the
    ext-apps spec puts it: the UI tools' definitions and results."""
    link = {"ui": {"resourceUri": "ui://sessionvault/handoff.html"}}
    if method == "tools/list":
        for tool in answer["result"]["tools"]:
            if tool["name"] in ("load_session", "list_sessions"):
                assert tool.pop("_meta") == link
            else:
                assert "_meta" not in tool
    elif method == "tools/call" and params["name"] in ("load_session", "list_sessions"):
        meta = answer["result"]["_meta"]  # on 2026-07-28 it also names the server
        assert {"ui": meta.pop("ui")} == link
        if not meta:
            del answer["result"]["_meta"]
    return answer


def test_hosts_without_the_extension_get_the_link_and_nothing_else_new(
    server, runtime, http, app_switched_off
) -> None:
    """The hosts that render Apps mostly speak 2025-11-25, whose capabilities a stateless server
    never sees: every host gets `_meta.ui.resourceUri` on load_session / list_sessions (the spec:
    a host without Apps treats the tool as a standard one). Apart from that link, byte for byte
    what the server answered before the App; resources/list shows the App to declaring hosts only."""
    user = make_user(runtime)
    save(server.url, user.key, name="app", summary="s", repo=REPO, handoff=True)
    undeclared = [
        None,
        {},
        {"extensions": {"io.example/other": {}}},
        {"extensions": {"io.modelcontextprotocol/ui": {}}},
    ]
    answers = {
        repr(c): [mcp(http, server.url, user.key, m, p, c).content for m, p in CALLS] for c in undeclared
    }
    declared = [mcp(http, server.url, user.key, m, p, UI).json() for m, p in CALLS]
    app_switched_off()
    for capabilities in undeclared:
        before = [mcp(http, server.url, user.key, m, p, capabilities).content for m, p in CALLS]
        for (method, params), now, then in zip(CALLS, answers[repr(capabilities)], before, strict=True):
            if method == "tools/list" or params.get("name") in ("load_session", "list_sessions"):
                assert _without_link(method, params, json.loads(now)) == json.loads(then), method
            else:
                assert now == then, (method, params)  # byte for byte
    for (method, _params), with_ui, without in zip(CALLS, declared, answers[repr({})], strict=True):
        if method == "resources/list":
            (app,) = [r for r in with_ui["result"]["resources"] if r["uri"].startswith("ui://")]
            assert app["mimeType"] == "text/html;profile=mcp-app"
            with_ui["result"]["resources"].remove(app)
        assert with_ui == json.loads(without), method  # the declaration adds the listing only


def test_the_app_resource_is_the_handoff_view_with_no_network_and_no_secret(server, runtime, http) -> None:
    user = make_user(runtime)
    read = mcp(
        http, server.url, user.key, "resources/read", {"uri": "ui://sessionvault/handoff.html"}, UI
    ).json()
    (content,) = read["result"]["contents"]
    assert content["mimeType"] == "text/html;profile=mcp-app"
    assert content["_meta"]["ui"]["csp"] == {
        "connectDomains": [],
        "resourceDomains": [],
        "frameDomains": [],
        "baseUriDomains": [],
    }
    page = content["text"]
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert (
        csp
        and "connect-src 'none'" in csp[1]
        and "default-src 'none'" in csp[1]
        and "'unsafe-inline'" not in csp[1]
    )
    assert "Claim this handoff" in page and "tools/call" in page
    for forbidden in (
        "fetch(",
        "XMLHttpRequest",
        "WebSocket",
        "EventSource",
        "innerHTML",
        "sv_live_",
        "http://",
        "https://",
    ):
        assert forbidden not in page, forbidden


def _live_keys(user_id: str) -> list[str]:
    with admin_db().identity() as conn:
        rows = conn.execute(
            "SELECT key_prefix FROM api_keys WHERE user_id = %s AND revoked_at IS NULL ORDER BY created_at",
            (user_id,),
        ).fetchall()
    return [str(r["key_prefix"]) for r in rows]


def test_making_a_key_asks_first_shows_it_once_and_never_more_than_the_signed_in_scopes(
    server, runtime, browser: Browser, http, capfd
) -> None:
    owner = make_user(runtime)  # read, write, delete
    browser.sign_in(owner.key)
    keys = browser.get("/web/keys")
    assert "Make a key" in text_of(keys)
    form = {"csrf": csrf_of(keys), "label": HOSTILE, "scope_read": "on", "scope_write": "on"}

    asked = browser.post("/web/keys/create", {**form, "step": "confirm"})
    assert asked.status_code == 200 and "Make this key?" in asked.text and HOSTILE not in asked.text
    assert _live_keys(owner.id) == [owner.key[:12]]  # asking made nothing

    made = browser.post("/web/keys/create", {**form, "step": "create"})
    assert made.status_code == 200
    assert_page_headers(made)  # no-store: the one page the key is on is never cached
    (key,) = re.findall(r"sv_live_[A-Za-z0-9_-]{32}", made.text)
    assert apikeys.looks_like_key(key) and key != owner.key
    assert _live_keys(owner.id) == [owner.key[:12], key[:12]]
    assert tool_result(server.url, key, "list_sessions")["isError"] is False  # it works at once
    listed = browser.get("/web/keys")
    assert key[:12] in text_of(listed) and key not in listed.text  # listed by prefix, never shown again
    assert "read, write" in text_of(listed).split(key[:12], 1)[1][:200]
    assert key not in capfd.readouterr().out  # nor in a log line

    # Never a stronger key than the one signed in with, and never without the delete scope.
    limited = make_user(runtime, scopes=("read", "delete"))
    other = Browser(http, browser.base)
    other.sign_in(limited.key)
    page = other.get("/web/keys")
    escalate = {"csrf": csrf_of(page), "label": "", "scope_read": "on", "scope_write": "on", "step": "create"}
    assert other.post("/web/keys/create", escalate).status_code == 403
    assert other.post("/web/keys/create", {**escalate, "scope_write": ""}).status_code == 200
    assert len(_live_keys(limited.id)) == 2
    no_scope = {**escalate, "scope_read": "", "scope_write": ""}
    assert other.post("/web/keys/create", no_scope).status_code == 400
    reader = make_user(runtime, scopes=("read", "write"))
    third = Browser(http, browser.base)
    third.sign_in(reader.key)
    plain = third.get("/web/keys")
    assert "Make a key" not in text_of(plain)
    refused = third.post("/web/keys/create", {**escalate, "csrf": csrf_of(plain), "scope_write": ""})
    assert refused.status_code == 403 and _live_keys(reader.id) == [reader.key[:12]]
    assert browser.post("/web/keys/create", {**form, "csrf": "A" * 43, "step": "create"}).status_code == 403
    assert len(_live_keys(owner.id)) == 2  # the forged post made nothing
