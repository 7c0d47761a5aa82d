"""Versions sealed under their own id (v2, migration 0012: a save is one flight) and versions
sealed before it (v1: bound to the session id and version number) side by side: the old ones
still load, list verified, search, export and re-key; a v2 ciphertext opens in no other row."""

from __future__ import annotations

import json

import psycopg
import pytest

from sessionvault.core import crypto, records
from sessionvault.db import identity, saves, sessions
from sessionvault.db.pool import Tenant
from sessionvault.errors import DecryptionFailed
from sessionvault.jobs import rekey
from sessionvault.service import portability, sealing
from sessionvault.service.principal import Principal

from ..conftest import admin_db, make_user, proof_for


def save(rt, who, **fields):
    return rt.vault.save(who, records.parse(records.SaveArgs, {"summary": "s", **fields}))


def load(rt, who, **fields):
    return rt.vault.load(who, records.parse(records.LoadArgs, fields))


def listed(rt, who) -> dict[str, dict]:
    return {s["name"]: s for s in rt.vault.list(who, records.parse(records.ListArgs, {}))["sessions"]}


def as_saved_before_0012(rt, who, name: str) -> None:
    """Rewrite every version of `name` (and its head's MAC) the way a save before migration
    0012 stored it: no seal_id, the ciphertext bound to the session id and version number, the
    preview in plaintext (sealed previews came with 0015)."""
    dek = rt.keys.unwrap(who.id, who.principal.wrapped_dek)
    with admin_db().tenant(who.id) as conn:
        cur = conn.execute(
            "SELECT s.id, s.name, s.repo, s.client, s.preview, s.sealed_preview, s.version AS head,"
            " v.version, v.seal_id, v.nonce, v.ciphertext"
            " FROM sessions s JOIN session_versions v ON v.session_id = s.id"
            " WHERE s.user_id = %s AND s.name = %s",
            (who.id, name),
        )
    for row in cur.fetchall():
        record = sealing.open_record(dek, who.id, row)
        aad = crypto.session_aad(who.id, str(row["id"]), row["name"], row["version"])
        nonce, ciphertext = crypto.seal(dek, json.dumps(record).encode(), aad)
        preview = sealing.preview_of(dek, who.id, row) if row["version"] == row["head"] else ""
        fields = (row["name"], row["repo"], row["client"], preview)
        with admin_db().tenant(who.id) as conn:
            conn.execute(
                "UPDATE session_versions SET seal_id = NULL, nonce = %s, ciphertext = %s"
                " WHERE session_id = %s AND version = %s",
                (nonce, ciphertext, row["id"], row["version"]),
            )
            if row["version"] == row["head"]:
                mac = crypto.meta_mac(dek, who.id, str(row["id"]), row["head"], fields)
                head = (
                    "UPDATE sessions SET seal_id = NULL, meta_mac = %s, preview = %s, sealed_preview = NULL"
                    " WHERE id = %s"
                )
                conn.execute(head, (mac, preview, row["id"]))


def test_a_save_stores_each_version_under_its_own_seal_id_on_the_head_too(runtime, pg):
    who = make_user(runtime)
    save(runtime, who.principal, name="plan", summary="one")
    save(runtime, who.principal, name="plan", summary="two")
    with psycopg.connect(pg.owner_url) as conn:
        versions = conn.execute(
            "SELECT version, seal_id FROM session_versions WHERE user_id = %s ORDER BY version", (who.id,)
        ).fetchall()
        head = conn.execute("SELECT seal_id FROM sessions WHERE user_id = %s", (who.id,)).fetchone()
    assert len({seal for _, seal in versions}) == 2 and None not in {seal for _, seal in versions}
    assert head[0] == versions[-1][1]


def test_versions_saved_before_0012_still_load_list_and_export(runtime):
    who = make_user(runtime)
    save(runtime, who.principal, name="old", summary="from before", repo="github.com/a/b", client="codex")
    save(runtime, who.principal, name="old", summary="still before", client="codex")
    as_saved_before_0012(runtime, who, "old")
    save(runtime, who.principal, name="new", summary="after")
    assert [load(runtime, who.principal, name="old", version=v)["summary"] for v in (1, 2)] == [
        "from before",
        "still before",
    ]
    shown = listed(runtime, who.principal)
    assert shown["old"]["client"] == "codex" and not shown["old"].get("unverified")
    assert not shown["new"].get("unverified")
    exported = portability.export_session(runtime.vault, who.principal, "old")["versions"]
    assert [v["record"]["summary"] for v in exported] == ["from before", "still before"]


def test_a_version_saved_before_0012_gets_a_v2_successor_when_saved_again(runtime):
    who = make_user(runtime)
    save(runtime, who.principal, name="mixed", summary="v1")
    as_saved_before_0012(runtime, who, "mixed")
    assert save(runtime, who.principal, name="mixed", summary="v2")["version"] == 2
    assert [load(runtime, who.principal, name="mixed", version=v)["summary"] for v in (1, 2)] == ["v1", "v2"]
    assert not listed(runtime, who.principal)["mixed"].get("unverified")


def test_rekeying_keeps_versions_of_both_formats_readable(runtime, admin_rt):
    who = make_user(runtime)
    save(runtime, who.principal, name="old", summary="before", client="cursor")
    as_saved_before_0012(runtime, who, "old")
    save(runtime, who.principal, name="new", summary="after", client="cursor")
    assert rekey.rekey_user(admin_rt, who.id) == 2
    fresh = Principal(who.id, identity.wrapped_key(admin_db(), who.id), proof=proof_for(who.id))
    assert load(runtime, fresh, name="old")["summary"] == "before"
    assert load(runtime, fresh, name="new")["summary"] == "after"
    assert all(not s.get("unverified") for s in listed(runtime, fresh).values())


def test_a_ciphertext_moved_to_another_version_does_not_open(runtime):
    who = make_user(runtime)
    save(runtime, who.principal, name="a", summary="first")
    save(runtime, who.principal, name="a", summary="second")
    with admin_db().tenant(who.id) as conn:
        conn.execute(
            "UPDATE session_versions SET nonce = o.nonce, ciphertext = o.ciphertext FROM session_versions o"
            " WHERE session_versions.user_id = %s AND session_versions.version = 1"
            " AND o.session_id = session_versions.session_id AND o.version = 2",
            (who.id,),
        )
    assert load(runtime, who.principal, name="a", version=2)["summary"] == "second"
    with pytest.raises(DecryptionFailed):
        load(runtime, who.principal, name="a", version=1)


def test_a_v2_version_stripped_of_its_seal_id_neither_opens_nor_lists_verified(runtime):
    who = make_user(runtime)
    save(runtime, who.principal, name="b", summary="sealed", client="gemini")
    with admin_db().tenant(who.id) as conn:
        conn.execute("UPDATE session_versions SET seal_id = NULL WHERE user_id = %s", (who.id,))
        conn.execute("UPDATE sessions SET seal_id = NULL WHERE user_id = %s", (who.id,))
    with pytest.raises(DecryptionFailed):
        load(runtime, who.principal, name="b")
    shown = listed(runtime, who.principal)["b"]
    assert shown["unverified"] and shown["client"] == ""


def test_a_save_run_twice_with_the_same_sealed_version_stores_it_once(runtime):
    """What a retry after a COMMIT whose answer was lost does (Database.in_tenant retries the
    save): the version is found by its seal_id, nothing is added or counted again."""
    who = make_user(runtime)
    dek = runtime.keys.unwrap(who.id, who.principal.wrapped_dek)
    head = saves.Head("twice", "", "p", "", None, None)
    version = sealing.seal(dek, who.id, {"name": "twice", "summary": "s", "saved_at": "x"}, head)
    policy = saves.Policy(keep_previous=20)
    first = saves.save(runtime.db, Tenant(who.id, proof=proof_for(who.id)), head, version, policy)
    again = saves.save(runtime.db, Tenant(who.id, proof=proof_for(who.id)), head, version, policy)
    assert (again["id"], again["version"]) == (first["id"], first["version"]) == (again["id"], 1)
    assert saves.usage(runtime.db, Tenant(who.id, proof=proof_for(who.id)))["bytes"] == version.size
    assert sessions.versions_of(runtime.db, Tenant(who.id, proof=proof_for(who.id)), "twice") == [1]
