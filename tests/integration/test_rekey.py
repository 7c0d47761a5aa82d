"""Re-keying after a suspected compromise: a fresh data key per user, every version
re-encrypted, nothing lost, the old key useless, and a save that raced it refused, not
written under the old key."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from sessionvault.core import records
from sessionvault.core.keys import WrappedKey
from sessionvault.db import identity
from sessionvault.errors import DecryptionFailed, KeyReplaced
from sessionvault.jobs import rekey
from sessionvault.service.principal import Principal

from ..conftest import admin_db, make_user, proof_for


def save(rt, who, **fields):
    return rt.vault.save(who, records.parse(records.SaveArgs, {"summary": "s", **fields}))


def load(rt, who, **fields):
    return rt.vault.load(who, records.parse(records.LoadArgs, fields))


def current(user_id: str) -> Principal:
    return Principal(user_id, identity.wrapped_key(admin_db(), user_id), proof=proof_for(user_id))


def test_rekeying_a_user_keeps_every_version_readable_under_a_new_key(runtime, admin_rt, pg):
    who = make_user(runtime)
    for summary in ("first", "second", "third"):
        save(runtime, who.principal, name="plan", summary=summary, client="cursor")
    save(runtime, who.principal, name="other", summary="kept")
    old = identity.wrapped_key(admin_db(), who.id)
    with psycopg.connect(pg.owner_url) as conn:
        before = conn.execute(
            "SELECT ciphertext FROM session_versions WHERE user_id = %s", (who.id,)
        ).fetchall()

    assert rekey.rekey_user(admin_rt, who.id) == 4

    fresh = current(who.id)
    assert fresh.wrapped_dek != old
    assert [load(runtime, fresh, name="plan", version=v)["summary"] for v in (1, 2, 3)] == [
        "first",
        "second",
        "third",
    ]
    listed = runtime.vault.list(fresh, records.parse(records.ListArgs, {}))["sessions"]
    assert {s["name"]: s["client"] for s in listed} == {"plan": "cursor", "other": ""} and not any(
        s.get("unverified") for s in listed
    )
    with psycopg.connect(pg.owner_url) as conn:
        after = conn.execute(
            "SELECT ciphertext FROM session_versions WHERE user_id = %s", (who.id,)
        ).fetchall()
    assert not set(before) & set(after)  # every ciphertext changed
    with pytest.raises(DecryptionFailed):  # the old key opens nothing any more
        load(runtime, Principal(who.id, old, proof=proof_for(who.id)), name="plan")


def test_a_save_that_read_the_old_key_before_a_rekey_is_refused_not_written_under_it(runtime, admin_rt):
    who = make_user(runtime)
    save(runtime, who.principal, name="a")
    stale = who.principal  # what a request admitted before the re-key carries
    rekey.rekey_user(admin_rt, who.id)
    with pytest.raises(KeyReplaced):
        save(runtime, stale, name="a", summary="raced")
    assert load(runtime, current(who.id), name="a")["summary"] == "s"


def test_a_stopped_run_resumes_with_the_users_not_yet_rekeyed(runtime, admin_rt):
    users = [make_user(runtime) for _ in range(3)]
    for user in users:
        save(runtime, user.principal, name="n")
    originals = [identity.wrapped_key(admin_db(), u.id) for u in users]
    start = datetime.now(UTC)
    rekey.rekey_user(admin_rt, users[0].id)  # as if a run had stopped after the first user
    after_first = identity.wrapped_key(admin_db(), users[0].id)
    # The database is shared with the whole run: other tests' users count too, so look at ours.
    rekey.rekey_all(admin_rt, start)
    keys = [identity.wrapped_key(admin_db(), u.id) for u in users]
    assert keys[0] == after_first  # keyed after the run began: not keyed again
    assert all(new != old for new, old in zip(keys, originals, strict=True))
    rekey.rekey_all(admin_rt, start)  # a re-run leaves finished users alone
    assert [identity.wrapped_key(admin_db(), u.id) for u in users] == keys
    for user in users:
        assert load(runtime, current(user.id), name="n")["found"]


def test_the_wrapped_key_row_format_is_untouched(runtime, admin_rt):
    who = make_user(runtime)
    rekey.rekey_user(admin_rt, who.id)
    assert isinstance(identity.wrapped_key(admin_db(), who.id), WrappedKey)
