"""Keywords without plaintext (issue 36): a query that names an identifier, an error code, a
path or a ticket finds the session that names it, through tokens keyed by the space's data key;
the database holds no term in the clear; a re-key and the `index_terms` task keep every head
findable; each hit says why it matched."""

from __future__ import annotations

import hashlib
import random

import psycopg
import pytest

from sessionvault.core import records
from sessionvault.core.terms import terms
from sessionvault.jobs import maintenance, rekey

from ..conftest import make_user
from .test_rekey import current

SESSIONS = {
    "rounding": "Fixed parse_invoice_rounding in src/billing/invoice.py: half-cent totals rounded down",
    "gateway": "Payments gateway answers ERR_CONN_REFUSED when the VPN drops; retry with backoff",
    "uploads": "JIRA-4821: flaky upload test, the S3 mock returns 503 SlowDown under load",
    "invoices": "Invoice PDFs render the customer address twice; template loop fixed",
    "billing": "Billing dashboard shows totals per month; added a currency column",
}
EXACT = [
    ("parse_invoice_rounding", "rounding"),
    ("parseInvoiceRounding", "rounding"),
    ("where is src/billing/invoice.py", "rounding"),
    ("ERR_CONN_REFUSED again", "gateway"),
    ("JIRA-4821", "uploads"),
    ("SlowDown", "uploads"),
]


def search(rt, who, query, **more):
    return rt.vault.search(who, records.parse(records.SearchArgs, {"query": query, **more}))


@pytest.fixture(scope="module")
def saved(local_runtime):
    who = make_user(local_runtime).principal
    for name, summary in SESSIONS.items():
        local_runtime.vault.save(who, records.parse(records.SaveArgs, {"name": name, "summary": summary}))
    return who


@pytest.mark.parametrize(("query", "expected"), EXACT)
def test_a_query_naming_an_identifier_error_path_or_ticket_finds_its_session_first(
    local_runtime, saved, query, expected
):
    hits = search(local_runtime, saved, query)["results"]
    assert hits[0]["name"] == expected, hits
    assert hits[0]["matched"] in ("keyword", "both")


def test_each_hit_says_why_it_matched_and_a_meaning_hit_how_close(local_runtime, saved):
    hits = search(local_runtime, saved, "customer invoice documents print the address two times")["results"]
    assert hits[0]["name"] == "invoices"
    assert {h["matched"] for h in hits} <= {"keyword", "meaning", "both"}
    assert all("score" in h for h in hits if h["matched"] != "keyword")


def test_the_database_holds_no_term_in_the_clear_and_two_spaces_share_no_token(runtime, pg):
    text = "parse_invoice_rounding ERR_CONN_REFUSED JIRA-4821"
    a, b = make_user(runtime), make_user(runtime)
    for who in (a, b):
        runtime.vault.save(who.principal, records.parse(records.SaveArgs, {"name": "same", "summary": text}))
    with psycopg.connect(pg.owner_url) as conn:  # as the owner: what a database reader sees
        rows = conn.execute(
            "SELECT user_id::text, token, tf FROM session_terms WHERE user_id = ANY(%s::uuid[])",
            ([a.id, b.id],),
        ).fetchall()
    tokens = {uid: {bytes(t) for t, _ in [(r[1], r[2]) for r in rows if r[0] == uid]} for uid in (a.id, b.id)}
    wanted = terms("same\n" + text)
    assert len(tokens[a.id]) == len(tokens[b.id]) == len(wanted)
    assert not tokens[a.id] & tokens[b.id]  # equal terms, unrelated tokens: keyed per space
    clear = {t.encode()[:16] for t in wanted} | {hashlib.sha256(t.encode()).digest()[:16] for t in wanted}
    assert not (tokens[a.id] | tokens[b.id]) & clear


def test_a_rekeyed_space_is_still_found_by_its_words(runtime, admin_rt):
    who = make_user(runtime)
    runtime.vault.save(
        who.principal, records.parse(records.SaveArgs, {"name": "gw", "summary": "ERR_CONN_REFUSED"})
    )
    assert [h["name"] for h in search(runtime, who.principal, "ERR_CONN_REFUSED")["results"]] == ["gw"]
    rekey.rekey_user(admin_rt, who.id)
    assert [h["name"] for h in search(runtime, current(who.id), "ERR_CONN_REFUSED")["results"]] == ["gw"]


def test_the_index_terms_task_gives_heads_saved_before_terms_theirs_once(runtime, maint_rt, pg):
    who = make_user(runtime)
    for name in ("old-a", "old-b"):
        summary = f"ticket OPS-{len(name)}{name[-1]} ERR_DISK_FULL"
        runtime.vault.save(who.principal, records.parse(records.SaveArgs, {"name": name, "summary": summary}))
    with psycopg.connect(pg.owner_url) as conn:  # as a head saved before migration 0022 is
        conn.execute("DELETE FROM session_terms WHERE user_id = %s", (who.id,))
        conn.execute("UPDATE sessions SET terms_indexed = NULL WHERE user_id = %s", (who.id,))
    assert search(runtime, who.principal, "ERR_DISK_FULL")["results"] == []

    done = maintenance.run(maint_rt, "index_terms")
    assert done["indexed"] >= 2 and done["failed"] == 0
    found = search(runtime, who.principal, "ERR_DISK_FULL")["results"]
    assert sorted(h["name"] for h in found) == ["old-a", "old-b"]
    assert maintenance.index_terms(maint_rt)["indexed"] == 0  # nothing left: idempotent


def test_sessions_that_match_a_query_alike_come_newest_first(runtime):
    who = make_user(runtime).principal
    words = ["zorblat", "quexit", "mivrant", "plonker", "snazzle", "drobnik", "kwelp"]
    picks = random.Random(3)
    for i in range(40):  # sessions naming some of the words: each word weighs its own
        summary = " ".join(picks.sample(words, 3))
        runtime.vault.save(who, records.parse(records.SaveArgs, {"name": f"f{i}", "summary": summary}))
    alike = " ".join(words)
    for i in range(30):  # all of them, saved one after another: equal scores, to the last bit
        runtime.vault.save(who, records.parse(records.SaveArgs, {"name": f"t{i}", "summary": alike}))
    hits = search(runtime, who, alike, max_results=10)["results"]
    assert [h["name"] for h in hits] == [f"t{i}" for i in range(29, 19, -1)]
