"""The injection test that means it (issue 34 item 5): attacker-chosen SQL run inside real
requests' transactions, as the serving role, after the tenant's proof is set. A test-only hook
wraps the data layer's serving-path transaction (`Database.in_tenant`) and runs the attacker's
statements first, in the same transaction, then puts the request's own proof back so the call
goes on. The attacker is a user with a valid key calling /mcp, the HTTP API and the web view
(signed in with that key); the victim has
sessions in their personal space and in a workspace the attacker does not belong to. Every
attempt must see 0 of the victim's rows and write none; a control shows the hook sees what the
attacker's own proof allows."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import httpx2
import psycopg

from sessionvault.core import records
from sessionvault.service import accounts

from ..conftest import admin_db, make_user
from ..e2e.test_web import Browser
from ..support.injection import ROWS, SET, Script
from ..support.jsonrpc import tool_result

DOOR = "SELECT count(*) FROM sessionvault_enter_key('\\x00'::bytea, '')"
WRITE = "UPDATE sessions SET repo = 'owned' WHERE user_id = ANY(%s::uuid[]) RETURNING 1"


def attacks(victim: str, space: str, forged: str, expired: str) -> list[tuple[str, Script]]:
    """Each attempt: statements run in order; the last one counts the victim's rows."""
    look = (ROWS, ([victim, space],))
    enter = "SELECT sessionvault_enter_workspace(%s, 'read', 'x', 0, 0)"
    return [
        ("read past the wall", [look]),
        ("set the tenant to the victim", [(SET, (victim,)), look]),
        ("set the tenant to their workspace", [(SET, (space,)), look]),
        ("a forged proof", [(SET, (forged,)), look]),
        ("an expired proof of theirs", [(SET, (expired,)), look]),
        ("enter their workspace", [(enter, (space,)), look]),
        ("reset the setting", [("RESET app.user_id", ()), look]),
        ("a session-wide setting", [("SELECT set_config('app.user_id', %s, false)", (victim,)), look]),
        ("the key-hash door, no key", [(DOOR, ()), look]),
        ("write into their space", [(WRITE, ([victim, space],)), look]),
    ]


def test_injected_sql_in_real_requests_reaches_no_other_tenant(server, runtime, pg, http, hook) -> None:
    victim, attacker = make_user(runtime), make_user(runtime)
    space_name = f"vault-{os.urandom(3).hex()}"
    space = accounts.create_workspace(admin_db(), runtime.keys.provider, space_name, victim.id)
    saves = [(victim, {"name": "payroll"}), (victim, {"name": "plan", "workspace": space_name})]
    for who, args in [*saves, (attacker, {"name": "mine"})]:
        runtime.vault.save(who.principal, records.parse(records.SaveArgs, {"summary": "s", **args}))
    with psycopg.connect(pg.owner_url) as conn:
        row = conn.execute("SELECT sessionvault_mint_proof(%s, -1)", (victim.id,)).fetchone()
    expired = str(row[0]) if row else ""
    tag, _, until, key, mac = attacker.principal.proof.split(".")
    forged = ".".join([tag, victim.id, until, key, mac])
    base, bearer = server.url.removesuffix("/mcp"), {"Authorization": f"Bearer {attacker.key}"}
    web = Browser(http, base)
    assert web.sign_in(attacker.key).status_code == 303
    surfaces: dict[str, Callable[[], None]] = {
        "mcp": lambda: _ok(tool_result(server.url, attacker.key, "list_sessions")),
        "api": lambda: _status(http.get(f"{base}/api/v1/sessions", headers=bearer)),
        "web": lambda: _status(web.get("/")),  # the listing: the signed-in key, re-admitted
    }
    for surface, call in surfaces.items():
        hook.script = [(ROWS, ([attacker.id],))]  # the control: the hook sees what the proof allows
        call()
        assert hook.seen.pop().fetchone() == {"n": 1}, surface
        for name, script in attacks(victim.id, space, forged, expired):
            hook.script = script
            call()
            assert hook.seen, (surface, name)  # the attack ran inside the request
            found = hook.seen.pop().fetchone()
            assert found == {"n": 0}, (surface, name, found)
    with psycopg.connect(pg.owner_url) as conn:
        repos = conn.execute(
            "SELECT repo FROM sessions WHERE user_id = ANY(%s::uuid[])", ([victim.id, space],)
        )
        assert "owned" not in [r[0] for r in repos]  # nothing written either


def _ok(result: dict[str, Any]) -> None:
    assert not result.get("isError"), result


def _status(reply: httpx2.Response) -> None:
    assert reply.status_code == 200, reply.text
