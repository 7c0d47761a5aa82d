""" "The latest session of a repo", against a model of the rule: the newest open handoff this
client may claim comes first (the version it offers); failing that, the newest save by time.
An accepted, superseded or expired offer gives no precedence at all."""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionvault.core import records
from sessionvault.core.checkpoints import AUTO_HISTORY, is_automatic
from sessionvault.service.vault import Vault

from ..conftest import make_user

APP, LIB = "github.com/o/app", "github.com/o/lib"
NAMES = {"plan": APP, "fix": APP, "auto/claude-code/x": APP, "lib": LIB}
CLIENTS = ("", "codex", "gemini-cli")
HISTORY = 100


@dataclass
class Offer:
    name: str
    version: int
    to: str
    accepted: bool = False
    superseded: bool = False
    expired: bool = False

    pruned: bool = False  # its version left the history (the offer goes with it)

    def claimable_by(self, client: str, repo: str) -> bool:
        open_ = not (self.accepted or self.superseded or self.expired or self.pruned)
        return open_ and self.to in ("", client) and NAMES[self.name] == repo


@dataclass
class Model:
    heads: dict[str, int] = field(default_factory=dict)
    saved_order: list[str] = field(default_factory=list)  # names, oldest save first
    offers: list[Offer] = field(default_factory=list)  # oldest offer first

    def save(self, name: str, to: str | None) -> None:
        self.heads[name] = self.heads.get(name, 0) + 1
        self.saved_order = [n for n in self.saved_order if n != name] + [name]
        keep = AUTO_HISTORY if is_automatic(name) else HISTORY  # versions kept before the head
        for o in self.offers:
            if o.name == name and o.version < self.heads[name] - keep:
                o.pruned = True
        if to is not None:  # a newer offer for the same repo and target replaces the open one
            for o in self.offers:
                if NAMES[o.name] == NAMES[name] and o.to == to and not o.accepted:
                    o.superseded = True
            self.offers.append(Offer(name, self.heads[name], to))

    def newest_offer(self, client: str, repo: str) -> Offer | None:
        return next((o for o in reversed(self.offers) if o.claimable_by(client, repo)), None)

    def latest(self, client: str, repo: str) -> tuple[str, int] | None:
        offer = self.newest_offer(client, repo)
        if offer is not None:
            return offer.name, offer.version
        newest = [n for n in self.saved_order if NAMES[n] == repo]
        return (newest[-1], self.heads[newest[-1]]) if newest else None


saves = st.tuples(st.just("save"), st.sampled_from(sorted(NAMES)), st.sampled_from((None, *CLIENTS)))
claims = st.tuples(st.just("claim"), st.sampled_from(CLIENTS), st.sampled_from((APP, LIB)))
expiries = st.tuples(st.just("expire"), st.integers(0, 20), st.none())
latests = st.tuples(st.just("latest"), st.sampled_from(CLIENTS), st.sampled_from((APP, LIB)))
steps = st.lists(st.one_of(saves, saves, claims, expiries, latests, latests), min_size=1, max_size=25)


def _load(vault: Vault, who, **fields):
    return vault.load(who, records.parse(records.LoadArgs, fields))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps)
def test_the_latest_is_the_newest_save_unless_an_open_offer_to_this_client_exists(runtime, pg, steps):
    vault = Vault(runtime.db, runtime.keys, runtime.vault.embedder, history_keep=HISTORY)
    user = make_user(runtime)
    who, model, n = user.principal, Model(), 0
    for op, a, b in steps:
        if op == "save":
            n += 1  # distinct content: an unchanged save adds no version
            b = None if is_automatic(a) else b  # a checkpoint is never offered
            fields = {"name": a, "repo": NAMES[a], "summary": f"save {n}", "client": "claude-code"}
            if b is not None:
                fields.update(handoff=True, to_client=b)
            vault.save(who, records.parse(records.SaveArgs, fields), checkpoint=is_automatic(a))
            model.save(a, b)
        elif op == "claim":
            got = _load(vault, who, repo=b, accept=True, client=a)
            want = model.newest_offer(a, b)
            claimed = (
                (got["name"], got["version"]) if got["found"] else None
            )  # a miss may name the last offer
            assert claimed == ((want.name, want.version) if want else None), (steps, op, a, b)
            if want:
                want.accepted = True
        elif op == "expire" and model.offers:
            offer = model.offers[a % len(model.offers)]
            with psycopg.connect(pg.owner_url) as conn:
                conn.execute(
                    """UPDATE handoffs SET expires_at = clock_timestamp() - interval '1 day'
                       WHERE user_id = %s AND version = %s
                         AND session_id = (SELECT id FROM sessions WHERE user_id = %s AND name = %s)""",
                    (user.id, offer.version, user.id, offer.name),
                )
            offer.expired = True
        elif op == "latest":
            got = _load(vault, who, repo=b, client=a)
            want = model.latest(a, b)
            assert ((got["name"], got["version"]) if got["found"] else None) == want, (steps, op, a, b)


def test_a_save_after_an_accepted_handoff_is_the_latest(runtime, user):
    """The review's sequence: offer A, claim it, save B; the latest is B, not the old A."""
    vault, who = runtime.vault, user.principal
    vault.save(
        who, records.parse(records.SaveArgs, {"name": "A", "repo": APP, "summary": "a", "handoff": True})
    )
    assert _load(vault, who, repo=APP, accept=True)["name"] == "A"
    vault.save(who, records.parse(records.SaveArgs, {"name": "B", "repo": APP, "summary": "b"}))
    assert _load(vault, who, repo=APP)["name"] == "B"
