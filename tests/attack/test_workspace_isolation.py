"""Randomized workspace isolation, checked against a model (docs/teams.md).

Four people and two workspaces; random membership changes (add, change role, remove) are
interleaved with saves, loads, lists, offers to a person and claims, each tool call made over
real HTTP with the person's own key, so every call after the first rides on the instance's
cached admission. The oracle is the membership at the moment of each call: a call into a
workspace succeeds exactly when the caller's role allows it, reads exactly what was saved
there, and no answer ever carries a value saved in a space its caller could not read then.
The seed is printed on failure (SESSIONVAULT_ISOLATION_SEED replays one); `make test` walks a
fixed seed, `make fuzz` new ones, SESSIONVAULT_FUZZ_SCALE times the steps."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Any

import httpx2

from sessionvault.db import workspaces
from sessionvault.service import accounts

from ..conftest import admin_db, make_user
from ..support.injection import ROWS, SET
from .conftest import DERANDOMIZE, scaled

STEPS = 1200
FIXED_SEED = 20261202  # `make test` replays this walk; `make fuzz` (a scale set) draws new ones
REPO = "github.com/acme/iso"
NAMES = ("a", "b")
ROLES = ("owner", "member", "reader")


@dataclass
class Offer:
    name: str
    version: int
    to_user: str | None
    claimed: bool = False
    superseded: bool = False


@dataclass
class Space:
    id: str
    name: str  # "" = the person's own
    sessions: dict[str, list[str]] = field(default_factory=dict)  # name -> summaries by version
    offers: list[Offer] = field(default_factory=list)


class Caller:
    def __init__(self, url: str, key: str, user_id: str, name: str) -> None:
        self.url, self.key, self.id, self.name = url, key, user_id, name
        self.http = httpx2.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30)

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        reply = self.http.post(self.url, json=body, headers={"Accept": "application/json, text/event-stream"})
        assert reply.status_code == 200, reply.text
        result = reply.json()["result"]
        if result.get("isError"):
            return {"error": result["content"][0]["text"]}
        return dict(result["structuredContent"])


def test_workspace_walls_hold_at_the_moment_of_every_call(runtime, server, hook) -> None:
    drawn = FIXED_SEED if DERANDOMIZE else random.SystemRandom().randrange(2**32)
    seed = int(os.environ.get("SESSIONVAULT_ISOLATION_SEED") or drawn)
    rng = random.Random(seed)
    people = [make_user(runtime) for _ in range(4)]
    names = {p.id: _name_of(p.id) for p in people}
    callers = [Caller(server.url, p.key, p.id, names[p.id]) for p in people]
    spaces: dict[str, Space] = {}
    roles: dict[tuple[str, str], str] = {}  # (workspace id, person id) -> role
    for i, owner in enumerate(people[:2]):
        wname = f"iso-{os.urandom(3).hex()}-{i}"
        wid = accounts.create_workspace(admin_db(), runtime.keys.provider, wname, owner.id)
        spaces[wid] = Space(wid, wname)
        roles[(wid, owner.id)] = "owner"
    for p in people:
        spaces[p.id] = Space(p.id, "")
    secrets_of = {s.id: set() for s in spaces.values()}  # every summary saved in each space
    crossings: list[str] = []
    counter = 0

    def role(space: Space, who: Caller) -> str | None:
        return "owner" if space.id == who.id else roles.get((space.id, who.id))

    def readable(who: Caller) -> set[str]:
        return {s.id for s in spaces.values() if role(s, who)}

    def check_no_crossing(answer: dict[str, Any], who: Caller, step: int) -> None:
        text = repr(answer)
        for sid, saved in secrets_of.items():
            if sid not in readable(who) and any(token in text for token in saved):
                crossings.append(f"step {step}: {who.name} saw a value of space {sid}")

    steps = scaled(STEPS)
    attacker = random.Random(seed + 1)  # the injection hook's draws, apart from the walk's
    injected = 0
    for step in range(steps):
        if hook.seen:  # the last call ran an injected statement inside its transaction
            assert hook.seen.pop().fetchone() == {"n": 0}, f"seed {seed} step {step}: injected SQL saw rows"
            injected += 1
        if not hook.script and attacker.random() < 0.2:  # SQL an injection would run, as the caller
            target = attacker.choice(list(spaces))
            hook.script = [(SET, (target,)), (ROWS, ([target],))]
        who = rng.choice(callers)
        choices = [s for s in spaces.values() if not s.name or rng.random() < 0.8]
        space = (
            rng.choice([s for s in choices if not s.name or s.id != who.id]) if choices else spaces[who.id]
        )
        if space.name == "" and space.id != who.id:
            space = spaces[who.id]  # personal spaces are only ever one's own
        ws = {"workspace": space.name} if space.name else {}
        held = role(space, who)
        op = rng.random()
        context = f"seed {seed} step {step}: {who.name} {op:.2f} in {space.name or 'personal'} as {held}"
        if op < 0.15 and space.name:  # membership changes, by the operator
            target = rng.choice(people)
            now = roles.get((space.id, target.id))
            owners = [u for (w, u), r in roles.items() if w == space.id and r == "owner"]
            if rng.random() < 0.4 and now and not (now == "owner" and len(owners) == 1):
                workspaces.remove(admin_db(), space.id, target.id)
                del roles[(space.id, target.id)]
            elif not (now == "owner" and len(owners) == 1):
                new = rng.choice(ROLES)
                workspaces.set_role(admin_db(), space.id, target.id, new, add=True)
                roles[(space.id, target.id)] = new
            continue
        name = rng.choice(NAMES)
        if op < 0.45:  # a save, sometimes offered to a person
            counter += 1
            token = f"tok{counter}x{seed}"
            fields: dict[str, Any] = {"name": name, "summary": token, "repo": REPO, **ws}
            person = rng.choice(people) if space.name and rng.random() < 0.3 else None
            if person is not None:
                fields["to_person"] = names[person.id]
            out = who.call("save_session", **fields)
            may = held in ("owner", "member")
            # an offer names only a person who could claim it: an owner or member (issue 37)
            member_ok = person is None or role(space, _caller_of(callers, person.id)) in ("owner", "member")
            if may and member_ok:
                assert "error" not in out, (context, out)
                space.sessions.setdefault(name, []).append(token)
                secrets_of[space.id].add(token)
                if person is not None:
                    for o in space.offers:
                        if o.to_user == person.id and not o.claimed:
                            o.superseded = True
                    space.offers.append(Offer(name, len(space.sessions[name]), person.id))
            else:
                assert "error" in out, (context, out)
        elif op < 0.7:  # a load by name
            out = who.call("load_session", name=name, **ws)
            check_no_crossing(out, who, step)
            if held is None:
                assert "no workspace named" in out.get("error", ""), (context, out)
            elif name in space.sessions:
                assert out.get("summary") == space.sessions[name][-1], (context, out)
            else:
                assert out.get("found") is False, (context, out)
        elif op < 0.85:  # a listing
            out = who.call("list_sessions", **ws)
            check_no_crossing(out, who, step)
            if held is None:
                assert "no workspace named" in out.get("error", ""), (context, out)
            else:
                assert {s["name"] for s in out["sessions"]} == set(space.sessions), (context, out)
        else:  # a claim in the workspace named
            if not space.name:
                continue
            out = who.call("load_session", repo=REPO, accept=True, **ws)
            check_no_crossing(out, who, step)
            open_ = [
                o
                for o in space.offers
                if not (o.claimed or o.superseded)
                and o.to_user in (None, who.id)
                and len(space.sessions[o.name]) - o.version <= runtime.vault.history_keep
            ]
            if held in ("owner", "member") and open_:
                want = open_[-1]
                assert (out.get("found"), out.get("name"), out.get("version")) == (
                    True,
                    want.name,
                    want.version,
                ), (context, out)
                want.claimed = True
            elif held in ("owner", "member"):
                assert out.get("found") is False, (context, out)
            else:
                assert "error" in out, (context, out)
    assert not crossings, f"seed {seed}: " + "; ".join(crossings[:5])
    assert injected > steps // 10  # the hook ran inside that many of the walk's requests
    print(f"workspace isolation: {steps} steps, seed {seed}, 0 crossings; {injected} injections saw nothing")


def _caller_of(callers: list[Caller], user_id: str) -> Caller:
    return next(c for c in callers if c.id == user_id)


def _name_of(user_id: str) -> str:
    with admin_db().identity() as conn:
        return str(conn.execute("SELECT name FROM users WHERE id = %s", (user_id,)).fetchone()["name"])
