"""The sign-in page: the one form that takes an API key, which travels once, in this form; the
browser then keeps only the sealed, short-lived session cookie (`web/session.py`). It is a bare
page (no navigation), since no one is signed in yet, and may say why a sign-in failed or ended."""

from __future__ import annotations

from sessionvault.server.web.pages.layout import bare_page, e, link


def signin(root: str, csrf: str, *, error: str = "", notice: str = "") -> bytes:
    problem = f'<p class="error" role="alert">{e(error)}</p>' if error else ""
    told = f'<p class="notice" role="status">{e(notice)}</p>' if notice else ""
    content = (
        '<div class="signin">'
        "<p>See your saved sessions, handoffs, activity and keys. Sign in with one of your API keys "
        "(<code>sv_live_...</code>, from <code>sessionvault key create</code>). The key travels once, in "
        "this form; your browser then keeps only a sealed, short-lived cookie (30 minutes), never "
        "the key.</p>"
        f"{told}{problem}"
        f'<form method="post" action="{e(link(root, "/web/signin"))}" class="panel">'
        f'<input type="hidden" name="csrf" value="{e(csrf)}">'
        '<label for="api_key">API key</label>'
        '<input type="password" id="api_key" name="api_key" autocomplete="off" required>'
        '<button type="submit">Sign in</button></form></div>'
    )
    return bare_page("Sign in to SessionVault", content)
