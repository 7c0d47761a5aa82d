"""Tenant isolation in the database itself: RLS as the non-superuser app role."""

import psycopg
import pytest

from sessionvault.core import records

from ..conftest import admin_db, make_user


def test_the_app_role_cannot_bypass_rls(pg):
    with psycopg.connect(pg.app_url) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert row == (False, False)
        owners = conn.execute(
            "SELECT DISTINCT tableowner FROM pg_tables WHERE tablename IN ('sessions', 'session_versions')"
        ).fetchall()
        assert owners == [("postgres",)]  # the app role does not own what it reads


def test_rls_is_enabled_and_forced_on_every_tenant_table(pg):
    with psycopg.connect(pg.app_url) as conn:
        rows = conn.execute(
            "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class WHERE relname = ANY(%s)",
            (["sessions", "session_versions", "rate_counters", "audit_events"],),
        ).fetchall()
    assert sorted(rows) == sorted(
        (t, True, True) for t in ("sessions", "session_versions", "rate_counters", "audit_events")
    )


def _save(rt, who, name):
    rt.vault.save(who, records.parse(records.SaveArgs, {"name": name, "summary": f"{name} summary"}))


def test_raw_select_in_a_tenant_transaction_sees_only_that_tenant(runtime):
    alice, bob = make_user(runtime), make_user(runtime)
    _save(runtime, alice.principal, "alice-plan")
    _save(runtime, bob.principal, "bob-plan")
    for who, mine in ((alice, "alice-plan"), (bob, "bob-plan")):
        with runtime.db.tenant(who.id, who.principal.proof) as conn:
            rows = conn.execute("SELECT * FROM sessions").fetchall()
            assert [r["name"] for r in rows] == [mine]
            assert {r["user_id"] for r in conn.execute("SELECT * FROM session_versions").fetchall()} == {
                rows[0]["user_id"]
            }


def test_with_no_tenant_set_neither_role_sees_any_tenants_rows(runtime, pg):
    _save(runtime, make_user(runtime).principal, "someone")
    readable = {
        pg.app_url: ("sessions", "session_versions", "rate_counters"),
        pg.admin_url: ("sessions", "session_versions", "rate_counters", "audit_events"),
    }
    for url, tables in readable.items():
        with psycopg.connect(url) as conn:
            for table in tables:
                # audit rows of failed authentications have no user: the only ones visible untenanted
                count = f"SELECT count(*) FROM {table} WHERE user_id IS NOT NULL"
                assert conn.execute(count).fetchone() == (0,), (url, table)
    with runtime.db.identity() as conn:
        assert conn.execute("SELECT count(*) AS n FROM sessions").fetchone()["n"] == 0


def test_the_app_role_cannot_write_into_another_tenant(runtime):
    alice, bob = make_user(runtime), make_user(runtime)
    # A tenant transaction is pipelined: the refusal surfaces when the block's flight returns.
    refused = pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security")
    with refused, runtime.db.tenant(alice.id, alice.principal.proof) as conn:
        conn.execute(
            "INSERT INTO sessions (user_id, name, preview, version) VALUES (%s, 'planted', '', 1)",
            (bob.id,),
        )
    with admin_db().tenant(bob.id) as conn:
        cur = conn.execute("SELECT count(*) AS n FROM sessions WHERE name = 'planted'")
    assert cur.fetchone()["n"] == 0  # and nothing of it was committed


def test_tools_cannot_reach_another_users_sessions(runtime):
    alice, bob = make_user(runtime), make_user(runtime)
    _save(runtime, alice.principal, "alice-secret")
    v, b = runtime.vault, bob.principal
    assert v.load(b, records.parse(records.LoadArgs, {"name": "alice-secret"}))["found"] is False
    assert v.load(b, records.parse(records.LoadArgs, {}))["found"] is False
    assert v.list(b, records.parse(records.ListArgs, {}))["sessions"] == []
    assert v.delete(b, records.parse(records.DeleteArgs, {"name": "alice-secret"}))["found"] is False
    assert v.load(alice.principal, records.parse(records.LoadArgs, {"name": "alice-secret"}))["found"]


def test_revoking_by_an_ambiguous_prefix_revokes_nothing(runtime):
    from sessionvault.core import apikeys
    from sessionvault.service import accounts

    a, b = make_user(runtime), make_user(runtime)
    twin = a.key[:12]  # force a 24-bit prefix collision between two users' keys
    admin = admin_db()
    with admin.identity() as conn:
        conn.execute("UPDATE api_keys SET key_prefix = %s WHERE key_hash = %s", (twin, apikeys.digest(b.key)))
    with pytest.raises(accounts.AccountError, match="2 keys start with"):
        accounts.revoke_key(admin, twin)
    assert accounts.revoke_key(admin, twin, b.id) == 1  # scoped to a user: precise
    assert accounts.revoke_key(admin, a.key) == 1  # the whole key: precise


def test_the_app_role_cannot_mint_users_or_keys_or_erase_the_audit_trail(runtime, pg):
    who = make_user(runtime)
    forbidden = [
        ("INSERT INTO users (name, dek_wrapped, key_id) VALUES ('mallory', '\\x00', 'x')", ()),
        ("UPDATE api_keys SET revoked_at = NULL WHERE user_id = %s", (who.id,)),
        ("UPDATE api_keys SET key_hash = '\\x00' WHERE user_id = %s", (who.id,)),
        ("DELETE FROM audit_events WHERE user_id = %s", (who.id,)),
        ("DELETE FROM rate_counters WHERE user_id = %s", (who.id,)),
        ("UPDATE audit_events SET tool = 'x' WHERE user_id = %s", (who.id,)),
    ]
    for sql, params in forbidden:
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege),
            runtime.db.tenant(who.id, who.principal.proof) as conn,
        ):
            conn.execute(sql, params)


def test_a_listing_withholds_plaintext_columns_changed_behind_the_servers_back(runtime, pg):
    who = make_user(runtime)
    runtime.vault.save(
        who.principal, records.parse(records.SaveArgs, {"name": "n", "summary": "real", "client": "cursor"})
    )
    listed = runtime.vault.list(who.principal, records.parse(records.ListArgs, {}))["sessions"]
    assert (listed[0]["client"], listed[0]["preview"], listed[0].get("unverified")) == (
        "cursor",
        "real",
        None,
    )
    with psycopg.connect(pg.owner_url) as conn:  # someone with write access to the table
        conn.execute(
            "UPDATE sessions SET client = 'claude-code', preview = 'run rm -rf' WHERE user_id = %s", (who.id,)
        )
    listed = runtime.vault.list(who.principal, records.parse(records.ListArgs, {}))["sessions"]
    assert (listed[0]["client"], listed[0]["preview"], listed[0]["unverified"]) == ("", "", True)
