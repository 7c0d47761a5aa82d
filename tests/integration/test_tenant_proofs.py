"""A wall that holds against SQL injection (issue 34, migration 0020): as the serving role, with
plain SQL (what an injection anywhere in the server would give an attacker), no setting names a
tenant by itself. Only a proof the database minted for a verified caller does, for 60 s, and it
never appears in the text of a statement another connection can see."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from psycopg.rows import dict_row

from sessionvault.core import apikeys, records
from sessionvault.db import admission, workspaces
from sessionvault.service import accounts

from ..conftest import admin_db, make_user


def save(runtime, user, name: str, summary: str) -> None:
    runtime.vault.save(user.principal, records.parse(records.SaveArgs, {"name": name, "summary": summary}))


def as_app(pg, tenant: str, sql: str, params: tuple = ()) -> list[dict]:
    """One transaction as the serving role: the tenant setting as an injection would make it."""
    with psycopg.connect(pg.app_url, row_factory=dict_row) as conn, conn.transaction():
        conn.execute("SELECT set_config('app.user_id', %s, true)", (tenant,))
        return conn.execute(sql, params).fetchall()


@pytest.fixture
def victim(runtime):
    user = make_user(runtime)
    save(runtime, user, "payroll", "the victim's own notes")
    return user


def forged(
    proof: str, *, tenant: str | None = None, expiry: str | None = None, mac: str | None = None
) -> str:
    tag, who, until, key, sig = proof.split(".")
    return ".".join([tag, tenant or who, expiry or until, key, mac or sig])


def test_a_plain_id_set_by_the_serving_role_names_no_tenant(pg, victim) -> None:
    """The issue's attack, verbatim: set_config of another user's id, then read and write."""
    assert as_app(pg, victim.id, "SELECT count(*) AS n FROM sessions")[0]["n"] == 0
    assert as_app(pg, victim.id, "SELECT count(*) AS n FROM session_versions")[0]["n"] == 0
    with pytest.raises(psycopg.errors.InsufficientPrivilege):  # RLS's WITH CHECK: no tenant, no write
        as_app(
            pg, victim.id, "UPDATE user_usage SET bytes = 0 WHERE user_id = %s RETURNING 1", (victim.id,)
        ) or (_ for _ in ()).throw(psycopg.errors.InsufficientPrivilege())
    rows = as_app(pg, proof_of_victim := victim.principal.proof, "SELECT count(*) AS n FROM sessions")
    assert rows[0]["n"] == 1 and proof_of_victim.startswith("p1.")  # the real proof works


def test_a_forged_altered_or_expired_proof_names_no_tenant(pg, runtime, victim) -> None:
    attacker = make_user(runtime)
    mine = attacker.principal.proof
    for bad in (
        forged(mine, tenant=victim.id),  # another tenant, my MAC
        forged(mine, mac="0" * 64),  # a made-up MAC
        forged(mine, expiry="1"),  # expired (and so altered)
        forged(victim.principal.proof, expiry=str(int(time.time()) + 3600)),  # a longer life
        mine[:-1] + ("0" if mine[-1] != "0" else "1"),  # one character off
        "p1." + victim.id,  # a proof's start alone
    ):
        assert as_app(pg, bad, "SELECT count(*) AS n FROM sessions")[0]["n"] == 0, bad
    # my own proof shows my own rows only
    save(runtime, attacker, "mine", "attacker's notes")
    names = as_app(pg, mine, "SELECT name FROM sessions")
    assert [r["name"] for r in names] == ["mine"]


def test_a_proof_past_its_time_names_no_tenant(pg, victim) -> None:
    """A genuine proof (its MAC holds) that expired: minted by the owner already past its end."""
    with psycopg.connect(pg.owner_url) as conn:
        expired = str(conn.execute("SELECT sessionvault_mint_proof(%s, -1)", (victim.id,)).fetchone()[0])  # type: ignore[index]
    assert as_app(pg, expired, "SELECT count(*) AS n FROM sessions")[0]["n"] == 0
    assert as_app(pg, victim.principal.proof, "SELECT count(*) AS n FROM sessions")[0]["n"] == 1


def test_the_serving_role_can_neither_read_the_keys_nor_mint(pg, victim) -> None:
    for sql in (
        "SELECT * FROM tenant_proof_keys",
        f"SELECT sessionvault_mint_proof('{victim.id}')",
        "SELECT sessionvault_rotate_proof_key()",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            as_app(pg, "", sql)
    # the key-hash door mints only for a hash it knows
    rows = as_app(
        pg,
        "",
        "SELECT (SELECT count(*) FROM sessionvault_enter_key('\\x00'::bytea, '')) AS x,"
        " current_setting('app.user_id') AS t",
    )
    assert rows[0]["t"] == ""


def test_a_workspace_is_entered_only_for_the_caller_a_proof_names(pg, runtime, victim) -> None:
    """sessionvault_enter_workspace trusted the setting as the caller: with a plain id, any
    member could be impersonated."""
    outsider = make_user(runtime)
    name = f"crew-{victim.id[:6]}"
    space = accounts.create_workspace(admin_db(), runtime.keys.provider, name, victim.id)
    sql = "SELECT sessionvault_enter_workspace(%s, 'write', 'x', 0, 0) AS role"
    assert as_app(pg, victim.id, sql, (space,))[0]["role"] is None  # a plain id: nobody
    assert as_app(pg, outsider.principal.proof, sql, (space,))[0]["role"] is None  # not a member
    assert as_app(pg, victim.principal.proof, sql, (space,))[0]["role"] == "owner"
    assert workspaces.find(admin_db(), name) == space


def test_the_proof_is_never_in_the_text_another_connection_sees(pg, runtime, victim) -> None:
    """Sent as a bind parameter: pg_stat_activity shows `$1`, never the proof."""
    seen: list[str] = []
    started = threading.Event()

    def call() -> None:
        with psycopg.connect(pg.app_url) as conn, conn.transaction():
            conn.execute("SELECT set_config('app.user_id', %s, true)", (victim.principal.proof,))
            started.set()
            conn.execute("SELECT pg_sleep(1), count(*) FROM sessions")

    worker = threading.Thread(target=call)
    worker.start()
    started.wait(10)
    with psycopg.connect(pg.owner_url, row_factory=dict_row) as watcher:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any("pg_sleep" in q for q in seen):
            seen += [r["query"] for r in watcher.execute("SELECT query FROM pg_stat_activity").fetchall()]
    worker.join()
    assert any("pg_sleep" in q for q in seen)
    assert not any("p1." in q for q in seen)


def test_rotating_the_key_under_load_fails_no_call(pg, runtime, victim) -> None:
    """Two keys are valid during a rotation: proofs minted a moment ago still open their tenant,
    new ones use the new key; calls made throughout all succeed."""
    failures: list[BaseException] = []
    stop = threading.Event()

    def calls() -> None:
        while not stop.is_set():
            try:
                who = make_user(runtime)
                save(runtime, who, "during", "a call during the rotation")
            except BaseException as exc:
                failures.append(exc)

    worker = threading.Thread(target=calls)
    worker.start()
    try:
        before = victim.principal.proof
        with psycopg.connect(pg.admin_url, autocommit=True) as admin:
            for _ in range(3):
                admin.execute("SELECT sessionvault_rotate_proof_key()")
                time.sleep(0.2)
        assert as_app(pg, before, "SELECT count(*) AS n FROM sessions")[0]["n"] == 1  # still valid
        limits = admission.Limits(10**6, 0)
        admitted = admission.admit(
            runtime.db,
            apikeys.digest(victim.key),
            "protocol",
            limits,
            request_id="t",
            tool="t",
            ip_hash=None,
            ua_hash=None,
        )
        fresh = admitted.proof
        assert fresh.split(".")[3] != before.split(".")[3]  # minted under the new key
    finally:
        stop.set()
        worker.join()
    assert failures == []
