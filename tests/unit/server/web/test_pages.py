"""The web view's HTML and diff as pure functions: saved text is escaped in every place it can
appear (text, attributes, links), the sections and the diff say what changed, and the MCP App's
document admits exactly its own script and style."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from sessionvault.server.mcp import app_view
from sessionvault.server.web import sections as diff
from sessionvault.server.web.pages import activity, handoffs, keys, layout, listing, signin, versions
from sessionvault.server.web.pages import session as session_page

HOSTILE = "\"><script>alert(1)</script><img src=x onerror=alert(1)>'&"
CHROME = layout.Chrome("", 'tok"en', "sessions")


def raw_markup(page: bytes) -> str:
    return page.decode()


def assert_inert(page: bytes) -> None:
    text = raw_markup(page)
    assert (
        "<script" not in text
        and "<img" not in text
        and "onerror=alert" not in text.replace("onerror=alert(1)&gt;", "")
    )
    assert 'value="tok"en"' not in text


def test_every_page_escapes_saved_text_and_query_values() -> None:
    texts = ("name", "repo", "saved_at", "client", "branch", "commit", "summary")
    lists = ("plan", "todos", "files", "errors", "tried")
    accepted = {
        "state": "accepted",
        **dict.fromkeys(("accepted_by", "accepted_with", "accepted_at"), HOSTILE),
    }
    session: dict[str, Any] = {
        **dict.fromkeys(texts, HOSTILE),
        **{field: [HOSTILE] for field in lists},
        "version": 2,
        "latest_version": 2,
        "versions": [2, 1],
        "handoff": accepted,
        "decisions": [{"decision": HOSTILE, "reason": HOSTILE}],
    }
    listed = {
        **dict.fromkeys(("name", "repo", "preview", "client", "updated_at"), HOSTILE),
        "version": 1,
        "handoff": {"state": "open", "to_client": HOSTILE, "expires_at": HOSTILE},
    }
    form = listing.search_form(CHROME, HOSTILE, HOSTILE, [HOSTILE])
    entries = [
        {"version": 1, "saved_at": HOSTILE, "record": session},
        {"version": 2, "saved_at": "", "record": session},
    ]
    key = {
        **dict.fromkeys(("id", "prefix", "label", "created_at"), HOSTILE),
        "scopes": [HOSTILE],
        "last_used_at": None,
        "revoked_at": None,
        "current": True,
    }
    audit = {**dict.fromkeys(("at", "tool", "error_class", "oauth_client_id"), HOSTILE), "outcome": "error"}
    rendered = [
        session_page.session(CHROME, session),
        listing.sessions(CHROME, [(HOSTILE, [listed])], form=form, repo=HOSTILE, older="/?cursor=" + HOSTILE),
        listing.search_results(CHROME, HOSTILE, [{**listed, "score": HOSTILE}], form=form, notice=HOSTILE),
        versions.versions(CHROME, HOSTILE, entries, 1, 2, diff.compare(session, {**session, "summary": "x"})),
        handoffs.handoffs(CHROME, [{**listed, **session["handoff"], "offered_at": HOSTILE}]),
        activity.activity(CHROME, [audit]),
        keys.keys(CHROME, [key], can_revoke=True, have=[HOSTILE], revoked=HOSTILE),
        keys.confirm_revoke(CHROME, key),
        signin.signin("", HOSTILE, error=HOSTILE, notice=HOSTILE),
        layout.message(CHROME, "", HOSTILE, HOSTILE),
    ]
    for page in rendered:
        assert_inert(page)
        assert "&lt;script&gt;" in raw_markup(page)  # shown, as text


def test_links_carry_names_urlencoded() -> None:
    page = raw_markup(
        session_page.session(CHROME, {"name": "auto/codex/a b&c", "version": 1, "versions": [1]})
    )
    assert 'href="/web/versions?name=auto%2Fcodex%2Fa+b%26c"' in page
    assert layout.link("/sv", "/web/keys", revoked="", cursor=None) == "/sv/web/keys"


def test_the_page_marks_where_you_are_and_labels_every_control() -> None:
    page = raw_markup(
        keys.keys(layout.Chrome("", "t", "keys"), [], can_revoke=False, have=["read"], revoked="")
    )
    assert '<a href="/web/keys" aria-current="page">Keys</a>' in page
    assert 'class="skip" href="#main"' in page and '<main id="main" tabindex="-1">' in page
    assert "needs the <code>delete</code> scope" in page
    form = listing.search_form(CHROME, "", "", ["github.com/a/b"])
    for control in ("q", "repo"):
        assert f'<label for="{control}">' in form and f'id="{control}"' in form


def test_the_diff_compares_each_section_line_by_line() -> None:
    old = {
        "summary": "one\ntwo",
        "plan": ["a", "b"],
        "decisions": [{"decision": "d", "reason": "r"}],
        "repo": "x",
    }
    new = {"summary": "one\nthree", "plan": ["a", "c"], "decisions": [], "repo": "x", "client": "codex"}
    got = {d.title: d.lines for d in diff.compare(old, new)}
    assert got["Summary"] == ((" ", "one"), ("-", "two"), ("+", "three"))
    assert got["Plan"] == ((" ", "1. a"), ("-", "2. b"), ("+", "2. c"))
    assert got["Decisions"] == (("-", "d (because r)"),)
    assert got["Details"] == ((" ", "repo: x"), ("+", "client: codex"))
    assert got["Todos"] == ()
    assert [d.changed for d in diff.compare(old, old)] == [False] * 8


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_app_document_admits_only_its_own_script_and_style() -> None:
    page = app_view.HTML
    (script,) = re.findall(r"<script>(.*?)</script>", page, re.S)
    (style,) = re.findall(r"<style>(.*?)</style>", page, re.S)
    (csp,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert f"script-src {_hash(script)};" in csp and f"style-src {_hash(style)};" in csp
    for directive in ("default-src 'none'", "connect-src 'none'", "img-src 'none'", "form-action 'none'"):
        assert directive in csp
    assert "textContent" in script and "innerHTML" not in script and "eval(" not in script
    assert app_view.URI.startswith("ui://") and app_view.MIME == "text/html;profile=mcp-app"
