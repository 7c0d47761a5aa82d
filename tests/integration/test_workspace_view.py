"""Workspaces in the web view, at the service and the database (migration 0016): an owner sees and
changes their own workspace's members and nothing else, whatever a form names; the database
decides from the signed-in key alone (never the tenant setting the serving role could choose);
the last owner stays; changes take effect on the person's next call; the open handoffs offered
to a person come from every space of theirs and no other."""

from __future__ import annotations

import os

import psycopg
import pytest

from sessionvault.core import apikeys, records
from sessionvault.db import web_spaces, workspaces
from sessionvault.errors import ScopeMissing, ValidationFailed, WorkspaceDenied
from sessionvault.service import accounts, workspace_view
from sessionvault.service.principal import Principal

from ..conftest import User, admin_db, make_user

REPO = "github.com/acme/shop"


def name_of(user: User) -> str:
    with admin_db().identity() as conn:
        return str(conn.execute("SELECT name FROM users WHERE id = %s", (user.id,)).fetchone()["name"])


def new_workspace(runtime, owner: User, *members: tuple[User, str]) -> str:
    name = f"team-{os.urandom(4).hex()}"
    workspace_id = accounts.create_workspace(admin_db(), runtime.keys.provider, name, owner.id)
    for user, role in members:
        workspaces.set_role(admin_db(), workspace_id, user.id, role, add=True)
    return name


def web(user: User, scopes: tuple[str, ...] = ("read", "write", "delete")) -> tuple[Principal, bytes]:
    """The principal and key hash a web sign-in with this user's key (of `scopes`) would carry."""
    return Principal(
        user.id, user.principal.wrapped_dek, frozenset(scopes), "web", proof=user.principal.proof
    ), apikeys.digest(user.key)


def save(runtime, who: User, **fields):
    return runtime.vault.save(who.principal, records.parse(records.SaveArgs, {"summary": "s", **fields}))


@pytest.fixture
def team(runtime):
    alice, bob, carol = make_user(runtime), make_user(runtime), make_user(runtime)
    ws = new_workspace(runtime, alice, (bob, "member"))
    return alice, bob, carol, ws


def test_an_owner_sees_the_members_and_a_member_or_stranger_does_not(runtime, team):
    alice, bob, carol, ws = team
    who, key_hash = web(alice)
    rows = workspace_view.members(runtime.db, runtime.vault.spaces, who, key_hash, ws)
    assert [(r["name"], r["role"], r["you"]) for r in rows] == [
        (name_of(alice), "owner", True),
        (name_of(bob), "member", False),
    ]
    with pytest.raises(WorkspaceDenied, match="is member: only its owners") as refused:
        workspace_view.members(runtime.db, runtime.vault.spaces, *web(bob), ws)
    assert refused.value.role == "denied:member"
    answers = []
    for name in (ws, f"no-such-{os.urandom(3).hex()}"):
        with pytest.raises(WorkspaceDenied) as refused:
            workspace_view.members(runtime.db, runtime.vault.spaces, *web(carol), name)
        assert refused.value.role is None
        answers.append(str(refused.value).replace(name, "NAME"))
    assert answers[0] == answers[1]
    # The database answers a member's key with nothing, whatever the service layer did first.
    assert web_spaces.members(runtime.db, apikeys.digest(bob.key), ws) == []


def test_an_owner_adds_changes_and_removes_and_each_takes_effect_on_the_next_call(runtime, team):
    alice, _, carol, ws = team
    who, key_hash = web(alice)
    save(runtime, alice, name="plan", workspace=ws)
    carol_name = name_of(carol)
    assert workspace_view.change(runtime.db, who, key_hash, ws, "add", carol_name, "reader") is None
    args = records.parse(records.LoadArgs, {"name": "plan", "workspace": ws})
    assert runtime.vault.load(carol.principal, args)["found"] is True
    with pytest.raises(WorkspaceDenied, match="reader"):
        save(runtime, carol, name="plan", workspace=ws)
    assert workspace_view.change(runtime.db, who, key_hash, ws, "role", carol_name, "member") == "reader"
    assert save(runtime, carol, name="plan", workspace=ws, summary="carol was here")["version"] == 2
    assert workspace_view.change(runtime.db, who, key_hash, ws, "remove", carol_name, "") == "member"
    with pytest.raises(WorkspaceDenied, match="no workspace named"):
        runtime.vault.load(carol.principal, args)
    with admin_db().identity() as conn:
        owned = "SELECT tool FROM workspace_access WHERE user_id = %s AND access = 'own' ORDER BY id"
        tools = [r["tool"] for r in conn.execute(owned, (alice.id,))]
    assert tools == ["web/members.add", "web/members.role", "web/members.remove"]  # each change, audited


def test_an_owner_of_one_workspace_cannot_touch_another_whatever_the_form_names(runtime, team):
    alice, bob, carol, _ = team
    theirs = new_workspace(runtime, carol, (bob, "member"))  # alice is not in it
    mine_too = new_workspace(runtime, bob, (alice, "member"))  # alice is only a member here
    key_hash = apikeys.digest(alice.key)
    for space, expected in ((theirs, "not_found"), (mine_too, "role")):
        for call in (
            lambda s: web_spaces.set_member(runtime.db, key_hash, s, name_of(alice), "owner", add=False),
            lambda s: web_spaces.set_member(runtime.db, key_hash, s, name_of(alice), "owner", add=True),
            lambda s: web_spaces.remove_member(runtime.db, key_hash, s, name_of(bob)),
        ):
            assert call(space)[0] == expected, space
        assert web_spaces.members(runtime.db, key_hash, space) == []
    assert [m["name"] for m in workspaces.members(admin_db(), workspaces.find(admin_db(), theirs))] == [
        name_of(carol),
        name_of(bob),
    ]
    assert workspaces.members(admin_db(), workspaces.find(admin_db(), mine_too))[1]["role"] == "member"


def test_the_database_takes_the_caller_from_the_key_never_from_the_tenant_setting(runtime, pg, team):
    """Raw SQL as the serving role with the owner's id as the tenant, but without their key,
    changes nothing: the functions know the caller only by a live key's hash."""
    alice, bob, _, ws = team
    with psycopg.connect(pg.app_url) as conn:
        conn.execute("SELECT set_config('app.user_id', %s, false)", (alice.id,))
        for key_hash in (b"\0" * 32, apikeys.digest(bob.key)):
            row = conn.execute(
                "SELECT status FROM sessionvault_web_remove_member(%s, %s, %s)", (key_hash, ws, name_of(bob))
            ).fetchone()
            assert row[0] in ("not_found", "role"), row
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM sessionvault_web_caller(%s, %s)", (apikeys.digest(alice.key), ws))
    assert workspaces.members(admin_db(), workspaces.find(admin_db(), ws))[1]["name"] == name_of(bob)


def test_a_change_needs_the_delete_scope_in_the_database_too(runtime, team):
    alice, bob, _, ws = team
    key, _ = accounts.create_key(admin_db(), alice.id, "no-delete", ("read", "write"))
    assert web_spaces.remove_member(runtime.db, apikeys.digest(key), ws, name_of(bob))[0] == "scope"
    who = Principal(
        alice.id,
        alice.principal.wrapped_dek,
        frozenset({"read", "write"}),
        "web",
        proof=alice.principal.proof,
    )
    with pytest.raises(ScopeMissing, match="delete"):
        workspace_view.change(runtime.db, who, apikeys.digest(key), ws, "remove", name_of(bob), "")
    assert len(workspaces.members(admin_db(), workspaces.find(admin_db(), ws))) == 2


def test_the_last_owner_stays_and_names_are_checked(runtime, team):
    alice, bob, carol, ws = team
    who, key_hash = web(alice)
    for action, role in (("remove", ""), ("role", "member")):
        with pytest.raises(ValidationFailed, match="last owner"):
            workspace_view.change(runtime.db, who, key_hash, ws, action, name_of(alice), role)
    with pytest.raises(ValidationFailed, match="no person named"):
        workspace_view.change(runtime.db, who, key_hash, ws, "add", ws, "member")  # a workspace is no person
    with pytest.raises(ValidationFailed, match="already member"):
        workspace_view.change(runtime.db, who, key_hash, ws, "add", name_of(bob), "owner")
    with pytest.raises(ValidationFailed, match="not a member"):
        workspace_view.change(runtime.db, who, key_hash, ws, "role", name_of(carol), "owner")
    with pytest.raises(ValidationFailed, match="role must be"):
        workspace_view.change(runtime.db, who, key_hash, ws, "add", name_of(carol), "admin")
    # With a second owner, the first may step down.
    workspace_view.change(runtime.db, who, key_hash, ws, "role", name_of(bob), "owner")
    assert workspace_view.change(runtime.db, who, key_hash, ws, "role", name_of(alice), "member") == "owner"


def test_the_open_handoffs_to_a_person_come_from_every_space_of_theirs_and_no_other(runtime, team):
    alice, bob, carol, ws = team
    workspaces.set_role(admin_db(), workspaces.find(admin_db(), ws), carol.id, "reader", add=True)
    save(runtime, alice, name="for-bob", workspace=ws, repo=REPO, to_person=name_of(bob))
    save(runtime, alice, name="for-anyone", workspace=ws, repo="github.com/acme/other", handoff=True)
    save(runtime, bob, name="own", repo="github.com/acme/mine", handoff=True, to_client="codex")
    stranger = make_user(runtime)
    save(runtime, stranger, name="elsewhere", repo=REPO, handoff=True)

    def offered(user: User) -> list[tuple[str, str, bool]]:
        rows = workspace_view.offers_to_me(runtime.db, apikeys.digest(user.key))
        return sorted((r["workspace"], r["name"], r["to_you"]) for r in rows)

    assert offered(bob) == [("", "own", False), (ws, "for-anyone", False), (ws, "for-bob", True)]
    assert offered(alice) == [(ws, "for-anyone", False)]  # an offer to bob is not hers to claim
    assert offered(carol) == []  # a reader cannot claim
    by = {r["name"]: r for r in workspace_view.offers_to_me(runtime.db, apikeys.digest(bob.key))}
    assert by["for-bob"]["offered_by"] == name_of(alice) and by["own"]["to_client"] == "codex"
    runtime.vault.load(bob.principal, records.parse(records.LoadArgs, {"repo": REPO, "accept": True}))
    assert "for-bob" not in {n for _, n, _ in offered(bob)}  # claimed: no longer open
    assert offered(stranger) == [("", "elsewhere", False)]


def test_a_sessions_versions_are_read_in_the_workspace_for_members_only(runtime, team):
    alice, bob, carol, ws = team
    save(runtime, alice, name="plan", workspace=ws, summary="one")
    save(runtime, bob, name="plan", workspace=ws, summary="two")
    line = workspace_view.session_versions(runtime.vault, bob.principal, "plan", ws)
    assert [v["record"]["summary"] for v in line["versions"]] == ["one", "two"]
    assert workspace_view.session_versions(runtime.vault, bob.principal, "plan", "")["versions"] == []
    with pytest.raises(WorkspaceDenied):
        workspace_view.session_versions(runtime.vault, carol.principal, "plan", ws)
