"""The admin function (IAM-invoked) and the scheduled maintenance function."""

import secrets

import boto3
import psycopg
import pytest

from sessionvault.core import records
from sessionvault.runtime import Runtime
from sessionvault.service.principal import Principal

from .conftest import REGION, ROOT, LambdaContext, body_json, http_event, load_handler, rpc

CTX = LambdaContext()


def test_admin_manages_users_and_keys_without_ever_listing_a_secret(aws):
    admin = load_handler("admin")
    name = f"alice-{secrets.token_hex(3)}"
    user = admin.handler({"action": "create_user", "name": name}, CTX)
    assert user["ok"] and user["user_id"]
    key = admin.handler({"action": "create_key", "user_id": name, "label": "laptop"}, CTX)
    assert key["ok"] and key["key"].startswith("sv_live_")
    listed = admin.handler({"action": "list_keys", "user_id": user["user_id"]}, CTX)
    assert [(k["prefix"], k["label"], k["revoked_at"]) for k in listed["keys"]] == [
        (key["key"][:12], "laptop", None)
    ]
    assert key["key"] not in repr(listed)
    revoked = admin.handler({"action": "revoke_key", "prefix": key["prefix"]}, CTX)
    assert (revoked["ok"], revoked["revoked"], revoked["prefix"]) == (True, 1, key["prefix"])
    assert admin.handler({"action": "list_keys", "user_id": name}, CTX)["keys"][0]["revoked_at"]
    assert admin.handler({"action": "create_user", "name": name}, CTX)["ok"] is False  # duplicate
    assert admin.handler({"action": "drop_tables"}, CTX) == {
        "ok": False,
        "error": "unknown action; one of: create_user, list_users, create_key, list_keys, revoke_key, "
        "disable_user, enable_user, delete_user, rotate_proof_key, rotate_keys, rekey_users,"
        " create_workspace, add_member,"
        " set_member_role, remove_member, list_members, list_workspaces, delete_workspace",
    }


def test_an_unknown_parameter_in_the_event_is_refused_naming_it_and_the_accepted_ones(aws):
    admin = load_handler("admin")
    name = f"erin-{secrets.token_hex(3)}"
    assert admin.handler({"action": "create_user", "name": name}, CTX)["ok"]
    refused = admin.handler({"action": "create_key", "user_id": name, "scope": "read"}, CTX)
    assert refused == {
        "ok": False,
        "error": "create_key: unknown parameter 'scope' (did you mean 'scopes'?); "
        "accepted: user_id (or user), label, scopes",
    }
    assert admin.handler({"action": "list_keys", "user_id": name}, CTX)["keys"] == []  # nothing made
    both = admin.handler({"action": "list_keys", "user_id": name, "user": "someone-else"}, CTX)
    assert both["ok"] is False and "user_id" in both["error"] and "user" in both["error"]
    refused = admin.handler({"action": "list_users", "name": name}, CTX)
    assert refused == {"ok": False, "error": "list_users: unknown parameter 'name'; it takes no parameters"}
    # Scopes as the list list_keys answers with are the same as the comma-separated text.
    made = admin.handler({"action": "create_key", "user_id": name, "scopes": ["read"]}, CTX)
    assert made["ok"] and made["scopes"] == ["read"]


DOCS = ROOT / "docs" / "clients.md"


def test_the_json_event_shown_in_docs_clients_works_as_written(aws):
    import json
    import re
    import shlex

    admin = load_handler("admin")
    commands = re.findall(r"^\s*(sessionvault admin '\{.*\}'.*)$", DOCS.read_text(), re.MULTILINE)
    assert commands, "docs/clients.md shows the admin function's JSON event"
    for command in commands:
        event = json.loads(shlex.split(command)[2])
        user = event.get("user_id") or event.get("user")
        admin.handler({"action": "create_user", "name": user}, CTX)  # fine if it exists already
        answer = admin.handler(event, CTX)
        assert answer["ok"] is True, answer
        assert answer["key"].startswith("sv_live_") and answer["scopes"] == ["read", "write"]


def test_disable_then_enable_and_list_users(aws):
    admin, mcp = load_handler("admin"), load_handler("mcp")
    name = f"ivy-{secrets.token_hex(3)}"
    user = admin.handler({"action": "create_user", "name": name}, CTX)
    key = admin.handler({"action": "create_key", "user": name}, CTX)["key"]
    listing = rpc("tools/call", {"name": "list_sessions", "arguments": {}})
    assert mcp.handler(http_event(listing, key=key), CTX)["statusCode"] == 200
    assert admin.handler({"action": "disable_user", "user": name}, CTX)["ok"]
    assert mcp.handler(http_event(listing, key=key), CTX)["statusCode"] == 401
    keys = admin.handler({"action": "list_keys", "user": name}, CTX)["keys"]
    assert [(k["state"], k["revoked_at"]) for k in keys] == [("disabled", None)]
    users = {u["name"]: u for u in admin.handler({"action": "list_users"}, CTX)["users"]}
    assert users[name]["id"] == user["user_id"] and users[name]["state"] == "disabled"
    assert users[name]["disabled_at"] and users[name]["keys"] == 1
    enabled = admin.handler({"action": "enable_user", "user": name}, CTX)
    assert enabled == {"ok": True, "enabled": True, "user_id": user["user_id"]}
    assert mcp.handler(http_event(listing, key=key), CTX)["statusCode"] == 200
    assert admin.handler({"action": "list_keys", "user": name}, CTX)["keys"][0]["state"] == "active"
    users = {u["name"]: u for u in admin.handler({"action": "list_users"}, CTX)["users"]}
    assert (users[name]["state"], users[name]["disabled_at"]) == ("active", None)


def test_disable_and_delete_user_with_all_their_data(aws, pg):
    admin, mcp = load_handler("admin"), load_handler("mcp")
    user = admin.handler({"action": "create_user", "name": f"bob-{secrets.token_hex(3)}"}, CTX)
    key = admin.handler({"action": "create_key", "user_id": user["user_id"]}, CTX)["key"]
    save = rpc("tools/call", {"name": "save_session", "arguments": {"name": "s", "summary": "x"}})
    assert mcp.handler(http_event(save, key=key), CTX)["statusCode"] == 200
    admin.handler({"action": "disable_user", "user_id": user["user_id"]}, CTX)
    assert mcp.handler(http_event(save, key=key), CTX)["statusCode"] == 401
    assert admin.handler({"action": "delete_user", "user_id": user["user_id"]}, CTX)["ok"]
    with psycopg.connect(pg.owner_url) as conn:  # the owner sees every tenant
        for table in (
            "users",
            "api_keys",
            "sessions",
            "session_versions",
            "rate_counters",
            "audit_events",
        ):
            column = "id" if table == "users" else "user_id"
            count = conn.execute(f"SELECT count(*) FROM {table} WHERE {column} = %s", (user["user_id"],))
            expected = 1 if table == "audit_events" else 0  # the deletion itself stays on record
            assert count.fetchone() == (expected,), table
        trail = conn.execute(
            "SELECT tool FROM audit_events WHERE user_id = %s", (user["user_id"],)
        ).fetchall()
        assert trail == [("admin:delete_user",)]


def test_rotate_keys_rewraps_every_dek_and_sessions_still_open(aws, pg, monkeypatch):
    admin, mcp = load_handler("admin"), load_handler("mcp")
    user = admin.handler({"action": "create_user", "name": f"rot-{secrets.token_hex(3)}"}, CTX)
    key = admin.handler({"action": "create_key", "user_id": user["user_id"]}, CTX)["key"]
    save = rpc("tools/call", {"name": "save_session", "arguments": {"name": "kept", "summary": "before"}})
    mcp.handler(http_event(save, key=key), CTX)

    new_key = boto3.client("kms", region_name=REGION).create_key()["KeyMetadata"]["Arn"]
    monkeypatch.setenv("SESSIONVAULT_KMS_KEY_ID", new_key)  # the stack now points at the new key
    admin, mcp = load_handler("admin"), load_handler("mcp")
    first = admin.handler({"action": "rotate_keys"}, CTX)
    assert first["ok"] and first["rewrapped"] >= 1
    # Resumable and idempotent: a second run has nothing left that it can move. (Other tests'
    # users, wrapped by keys that no longer exist, are counted as failed, not fatal.)
    second = admin.handler({"action": "rotate_keys"}, CTX)
    assert second["rewrapped"] == 0 and second["failed"] == first["failed"]
    with psycopg.connect(pg.owner_url) as conn:
        row = conn.execute("SELECT key_id FROM users WHERE id = %s", (user["user_id"],)).fetchone()
    assert row == (new_key,)
    load = rpc("tools/call", {"name": "load_session", "arguments": {"name": "kept"}})
    answer = mcp.handler(http_event(load, key=key), CTX)
    assert body_json(answer)["result"]["structuredContent"]["summary"] == "before"


def test_maintenance_tasks_prune_and_reembed(aws, pg, monkeypatch, local_runtime):
    monkeypatch.setenv("SESSIONVAULT_AUDIT_RETENTION_DAYS", "30")
    admin, maintenance = load_handler("admin"), load_handler("maintenance")
    user = admin.handler({"action": "create_user", "name": f"m-{secrets.token_hex(3)}"}, CTX)
    uid = user["user_id"]
    with psycopg.connect(pg.owner_url) as conn:
        conn.execute(
            "INSERT INTO rate_counters (user_id, budget, span, slot, hits)"
            " VALUES (%s, 'tool', 'day', now() - interval '3 days', 1), (%s, 'tool', 'day', now(), 1)",
            (uid, uid),
        )
        conn.execute(
            "INSERT INTO audit_events (user_id, at, tool, outcome, latency_ms)"
            " VALUES (%s, now() - interval '40 days', 't', 'ok', 1), (%s, now(), 't', 'ok', 1),"
            " (NULL, now() - interval '40 days', 't', 'error', 1)",
            (uid, uid),
        )
    pruned = maintenance.handler({"task": "prune_rate_limits"}, CTX)
    assert pruned["deleted"] >= 1
    assert maintenance.handler({"task": "prune_rate_limits"}, CTX)["deleted"] == 0  # idempotent
    assert maintenance.handler({"task": "prune_audit"}, CTX)["deleted"] >= 2
    assert maintenance.handler({"task": "prune_audit"}, CTX)["deleted"] == 0
    with psycopg.connect(pg.owner_url) as conn:
        left = conn.execute(
            "SELECT count(*) FROM audit_events WHERE user_id = %s AND tool NOT LIKE 'admin:%%'", (uid,)
        ).fetchone()
        assert left == (1,)  # the recent row stays


def test_reembed_fills_missing_vectors_in_bounded_batches(local_runtime, maint_runtime, settled):
    from sessionvault.jobs import maintenance
    from sessionvault.service.vault import Vault

    from ..conftest import make_user

    who: Principal = make_user(local_runtime).principal

    class Down:
        model = local_runtime.vault.embedder.model

        def embed(self, text):
            return None

    offline = Vault(local_runtime.db, local_runtime.keys, Down())
    for i in range(3):
        offline.save(
            who, records.parse(records.SaveArgs, {"name": f"later-{i}", "summary": "graphql schema"})
        )
    first = maintenance.reembed(maint_runtime, batch=2)
    assert first["embedded"] == 2
    maintenance.reembed(maint_runtime, batch=50)
    with local_runtime.db.tenant(who.user_id, who.proof) as conn:
        assert (
            conn.execute("SELECT count(*) AS n FROM sessions WHERE sealed_vector IS NULL").fetchone()["n"]
            == 0
        )
    hits = local_runtime.vault.search(who, records.parse(records.SearchArgs, {"query": "graphql"}))
    assert len(hits["results"]) == 3


def test_a_failing_row_backs_off_instead_of_blocking_the_rest(local_runtime, maint_runtime, settled):
    from sessionvault.jobs import maintenance
    from sessionvault.service.vault import Vault

    from ..conftest import make_user

    who = make_user(local_runtime).principal
    offline = Vault(local_runtime.db, local_runtime.keys, _Down(local_runtime))
    offline.save(who, records.parse(records.SaveArgs, {"name": "poison", "summary": "never embeds"}))
    broken = Runtime(
        maint_runtime.settings, maint_runtime.db, maint_runtime.keys, _on(maint_runtime, offline)
    )
    assert maintenance.reembed(broken, batch=1)["failed"] == 1
    offline.save(who, records.parse(records.SaveArgs, {"name": "fine", "summary": "kafka consumer lag"}))
    assert maintenance.reembed(maint_runtime, batch=1)["embedded"] == 1  # not spent on the poison row
    with local_runtime.db.tenant(who.user_id, who.proof) as conn:
        rows = conn.execute(
            "SELECT name, sealed_vector IS NOT NULL AS has, embed_failures,"
            " embed_retry_at > now() + interval '9 minutes' AS backing_off FROM sessions"
        ).fetchall()
    assert {r["name"]: (r["has"], r["embed_failures"], r["backing_off"]) for r in rows} == {
        "poison": (False, 1, True),  # retried later, never given up
        "fine": (True, 0, None),
    }


def _on(rt, vault):
    """`vault`'s embedder on the maintenance role's connections."""
    from sessionvault.service.vault import Vault

    return Vault(rt.db, rt.keys, vault.embedder)


@pytest.fixture
def settled(maint_runtime):
    """The database is shared by the whole run: first let every other test's stale rows be
    embedded or back off, so that a batch here is spent on this test's rows only."""
    from sessionvault.jobs import maintenance

    maintenance.reembed(maint_runtime, batch=100_000)


class _Down:
    def __init__(self, rt):
        self.model = rt.vault.embedder.model

    def embed(self, text):
        return None
