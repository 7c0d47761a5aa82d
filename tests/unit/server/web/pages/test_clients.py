"""The clients page: each client's last checkpoint (from its auto/<client>/ sessions), last save
and last handoff; the arrows of the last 30 days go from the client that saved the offered
version to the one that accepted it (or the one it waits for); and names stay text."""

from __future__ import annotations

from datetime import UTC, datetime

from sessionvault.server.web.pages import clients, layout

CHROME = layout.Chrome("", "token", "clients")
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
HOSTILE = '"><script>alert(1)</script></svg><img src=x onerror=alert(1)>'
SESSIONS = [
    {
        "name": "auto/codex/abc",
        "client": "codex",
        "updated_at": "2026-12-01T09:00:00+00:00",
        "automatic": True,
    },
    {"name": "plan", "client": "claude-code", "updated_at": "2026-12-02T08:00:00+00:00"},
    {"name": "plan-old", "client": "codex", "updated_at": "2026-11-01T08:00:00+00:00"},
]
SENDERS = {("plan", 1): "claude-code", ("plan", 2): "codex", ("old", 1): "codex"}
OFFERS = [
    {"name": "plan", "version": 1, "offered_at": "2026-11-20T10:00:00+00:00", "state": "accepted",
     "accepted_by": "codex", "accepted_at": "2026-11-20T11:00:00+00:00"},
    {"name": "plan", "version": 2, "offered_at": "2026-11-25T10:00:00+00:00", "state": "open",
     "to_client": "gemini-cli"},
    {"name": "plan", "version": 2, "offered_at": "2026-11-26T10:00:00+00:00", "state": "expired"},
    {"name": "old", "version": 1, "offered_at": "2026-10-01T10:00:00+00:00", "state": "accepted",
     "accepted_by": "claude-code", "accepted_at": "2026-10-01T11:00:00+00:00"},
    {"name": "team", "version": 1, "offered_at": "2026-11-29T10:00:00+00:00", "state": "accepted",
     "offered_by": "alice", "accepted_by": "cursor", "accepted_at": "2026-11-29T10:30:00+00:00"},
]  # fmt: skip


def test_the_arrows_cover_the_last_30_days_from_sender_to_taker() -> None:
    assert clients.edges(OFFERS, SENDERS, NOW) == {
        ("claude-code", "codex"): 1,  # accepted
        ("codex", "gemini-cli"): 1,  # open, addressed
        ("person: alice", "cursor"): 1,  # a workspace offer names its person
    }  # the expired offer to anyone has no taker; October's is out of the window


def test_each_client_has_its_last_checkpoint_save_and_handoff() -> None:
    rows = {c.name: c for c in clients.summarize(SESSIONS, OFFERS, SENDERS)}
    codex = rows["codex"]
    assert codex.checkpoint == "2026-12-01T09:00:00+00:00" and codex.saved == codex.checkpoint
    assert (codex.handoff, codex.handoff_what) == ("2026-11-26T10:00:00+00:00", "offered")
    claude = rows["claude-code"]
    assert claude.checkpoint == "" and (claude.handoff_what, claude.handoff[:10]) == ("offered", "2026-11-20")
    assert rows["cursor"].handoff_what == "accepted" and "person: alice" not in rows


def test_the_page_says_where_hook_health_lives_and_escapes_every_name() -> None:
    hostile = [{"name": f"auto/{HOSTILE}/x", "client": HOSTILE, "updated_at": "", "automatic": True}]
    offers = [{"name": "s", "version": 1, "offered_at": "2026-12-01T00:00:00+00:00", "state": "accepted",
               "accepted_by": HOSTILE, "accepted_at": "2026-12-01T00:01:00+00:00"}]  # fmt: skip
    page = clients.clients(CHROME, hostile, offers, {("s", 1): HOSTILE}, NOW).decode()
    assert "<script" not in page and "<img" not in page and page.count("</svg>") == 1
    assert "&lt;script&gt;" in page and 'aria-current="page">Clients' in page
    assert "known only on the computer that runs them" in page


def test_an_account_without_clients_or_handoffs_says_so() -> None:
    page = clients.clients(CHROME, [], [], {}, NOW).decode()
    assert "No client has saved a session yet." in page and "No handoffs" in page and "<svg" not in page
