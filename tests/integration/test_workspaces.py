"""Workspaces against the real database as the serving role (docs/teams.md): members share a
workspace's sessions under its own data key, roles decide what each may do, membership is
decided by the database at the moment of each statement, a non-member learns nothing (not even
that the workspace exists), and handoffs reach a person across their spaces exactly once."""

from __future__ import annotations

import os

import psycopg
import pytest

from sessionvault.core import offers, records
from sessionvault.db import workspaces
from sessionvault.errors import DecryptionFailed, WorkspaceDenied
from sessionvault.service import accounts, portability, purge
from sessionvault.service.vault import Vault

from ..conftest import OWNER_URL, User, admin_db, make_user

REPO = "github.com/acme/shop"


def save(vault: Vault, who: User, **fields):
    return vault.save(who.principal, records.parse(records.SaveArgs, {"summary": "s", **fields}))


def load(vault: Vault, who: User, **fields):
    return vault.load(who.principal, records.parse(records.LoadArgs, fields))


def listed(vault: Vault, who: User, **fields):
    return vault.list(who.principal, records.parse(records.ListArgs, fields))


def new_workspace(runtime, owner: User, *members: tuple[User, str]) -> str:
    name = f"team-{os.urandom(4).hex()}"
    workspace_id = accounts.create_workspace(admin_db(), runtime.keys.provider, name, owner.id)
    for user, role in members:
        workspaces.set_role(admin_db(), workspace_id, user.id, role, add=True)
    return name


@pytest.fixture
def team(runtime):
    alice, bob, carol = make_user(runtime), make_user(runtime), make_user(runtime)
    name = new_workspace(runtime, alice, (bob, "member"))
    return runtime.vault, alice, bob, carol, name


def test_members_share_a_workspaces_sessions_and_the_personal_space_stays_apart(team):
    vault, alice, bob, _, ws = team
    out = save(vault, alice, name="plan", workspace=ws, summary="migrate the orders table", repo=REPO)
    assert (out["version"], out["workspace"]) == (1, ws)
    save(vault, alice, name="plan", summary="alice's own plan")  # the same name, personal
    theirs = load(vault, bob, name="plan", workspace=ws)
    assert (theirs["summary"], theirs["workspace"]) == ("migrate the orders table", ws)
    assert load(vault, bob, name="plan")["found"] is False  # bob's personal space has none
    assert load(vault, alice, name="plan")["summary"] == "alice's own plan"
    assert [s["workspace"] for s in listed(vault, bob, workspace=ws)["sessions"]] == [ws]
    assert "workspace" not in listed(vault, alice)["sessions"][0]  # personal: no label


def test_a_non_member_gets_exactly_what_a_nonexistent_workspace_gets(team):
    vault, alice, _, carol, ws = team
    save(vault, alice, name="secret", workspace=ws)
    answers = []
    for name in (ws, "no-such-workspace-" + os.urandom(3).hex()):
        for call in (
            lambda n: load(vault, carol, name="secret", workspace=n),
            lambda n: listed(vault, carol, workspace=n),
            lambda n: save(vault, carol, name="x", workspace=n),
        ):
            with pytest.raises(WorkspaceDenied) as refused:
                call(name)
            answers.append(str(refused.value).replace(name, "NAME"))
    assert answers[:3] == answers[3:]


def test_a_reader_reads_but_cannot_write_claim_or_delete(runtime, team):
    vault, alice, _, carol, ws = team
    workspace_id = workspaces.find(admin_db(), ws)
    workspaces.set_role(admin_db(), workspace_id, carol.id, "reader", add=True)
    save(vault, alice, name="doc", workspace=ws, repo=REPO, handoff=True)
    assert load(vault, carol, name="doc", workspace=ws)["found"] is True
    for refused_call in (
        lambda: save(vault, carol, name="doc", workspace=ws),
        lambda: vault.delete(
            carol.principal, records.parse(records.DeleteArgs, {"name": "doc", "workspace": ws})
        ),
        lambda: load(vault, carol, repo=REPO, accept=True, workspace=ws),
    ):
        with pytest.raises(WorkspaceDenied, match="reader"):
            refused_call()
    assert load(vault, alice, name="doc", workspace=ws)["version"] == 1  # nothing changed


def test_delete_all_in_a_workspace_is_for_owners_only(team):
    vault, alice, bob, _, ws = team
    save(vault, alice, name="a", workspace=ws)
    args = records.parse(records.DeleteAllArgs, {"workspace": ws})
    with pytest.raises(WorkspaceDenied, match="member"):
        purge.delete_all(vault, bob.principal, args)
    assert purge.delete_all(vault, alice.principal, args)["would_delete"] == 1


def test_removing_a_member_takes_effect_on_their_next_call(team):
    vault, alice, bob, _, ws = team
    save(vault, alice, name="plan", workspace=ws)
    assert load(vault, bob, name="plan", workspace=ws)["found"] is True  # bob's instance knows ws now
    workspaces.remove(admin_db(), workspaces.find(admin_db(), ws), bob.id)
    with pytest.raises(WorkspaceDenied):
        load(vault, bob, name="plan", workspace=ws)
    with pytest.raises(WorkspaceDenied):
        save(vault, bob, name="plan", workspace=ws, summary="after removal")
    assert load(vault, alice, name="plan", workspace=ws)["version"] == 1


def test_an_offer_to_a_person_reaches_them_across_their_spaces_exactly_once(runtime, team):
    vault, alice, bob, carol, ws = team
    workspaces.set_role(admin_db(), workspaces.find(admin_db(), ws), carol.id, "member", add=True)
    out = save(vault, alice, name="incident", workspace=ws, repo=REPO, to_person=bob_name(bob))
    assert out["handoff"]["to_person"] == bob_name(bob)
    # carol, a member too, cannot take what was offered to bob
    assert load(vault, carol, repo=REPO, accept=True, client="codex")["found"] is False
    latest = load(vault, bob, repo=REPO, client="codex")  # his session start, naming no workspace
    assert (latest["name"], latest["workspace"]) == ("incident", ws)
    assert latest["handoff"]["offered_by"] == bob_name(alice)
    won = load(vault, bob, repo=REPO, accept=True, client="codex")
    assert (won["found"], won["name"], won["workspace"]) == (True, "incident", ws)
    assert load(vault, bob, repo=REPO, accept=True, client="codex")["found"] is False


def test_who_offered_a_handoff_is_still_named_after_they_leave_the_workspace(runtime, team):
    vault, _, bob, carol, ws = team
    workspace_id = workspaces.find(admin_db(), ws)
    workspaces.set_role(admin_db(), workspace_id, carol.id, "member", add=True)
    save(vault, carol, name="handover", workspace=ws, repo=REPO, to_person=bob_name(bob))
    workspaces.remove(admin_db(), workspace_id, carol.id)  # carol moves on
    offer = load(vault, bob, name="handover", workspace=ws)["handoff"]
    assert (offer["offered_by"], offer["to_person"]) == (bob_name(carol), bob_name(bob))
    # a person who never had an offer in the workspace stays unnamed to it
    with psycopg.connect(OWNER_URL[-1]) as conn:
        conn.execute("SELECT set_config('app.user_id', %s, false)", (workspace_id,))
        named = conn.execute("SELECT sessionvault_member_name(%s)", (make_user(runtime).id,)).fetchone()
    assert named == (None,)


def test_a_claimed_handoff_names_the_person_who_took_it_and_their_client(runtime, team):
    vault, alice, bob, _, ws = team
    save(vault, alice, name="rollout", workspace=ws, repo=REPO, to_person=bob_name(bob))
    assert load(vault, bob, repo=REPO, accept=True, client="codex")["found"] is True
    offer = load(vault, alice, name="rollout", workspace=ws)["handoff"]
    assert (offer["state"], offer["accepted_person"], offer["accepted_by"]) == (
        "accepted",
        bob_name(bob),
        "codex",
    )
    assert offers.claimer(offer) == f"{bob_name(bob)} (codex)"  # as the web view and texts say it


def test_to_person_must_name_a_member(team):
    vault, alice, _, carol, ws = team
    from sessionvault.errors import ValidationFailed

    with pytest.raises(ValidationFailed, match="no member named"):
        save(vault, alice, name="x", workspace=ws, to_person=bob_name(carol))


def test_a_ciphertext_cannot_move_between_a_workspace_and_a_personal_space(runtime, pg, team):
    """The workspace's id is in every version's associated data: a database writer who moves a
    session, whole, from the workspace into a member's personal space gets nothing readable."""
    vault, alice, _, _, ws = team
    save(vault, alice, name="moved", workspace=ws, summary="team secret")
    workspace_id = workspaces.find(admin_db(), ws)
    with psycopg.connect(pg.owner_url) as conn:
        moved = {"ws": workspace_id, "me": alice.id}
        conn.execute("UPDATE sessions SET user_id = %(me)s WHERE user_id = %(ws)s AND name = 'moved'", moved)
        conn.execute("UPDATE session_versions SET user_id = %(me)s WHERE user_id = %(ws)s", moved)
    with pytest.raises(DecryptionFailed):
        load(vault, alice, name="moved")


def test_raw_sql_as_the_serving_role_sees_no_workspace_row_with_a_members_tenant(runtime, pg, team):
    vault, alice, bob, _, ws = team
    save(vault, alice, name="plan", workspace=ws)
    workspace_id = workspaces.find(admin_db(), ws)
    with psycopg.connect(pg.app_url) as conn:
        for tenant in ("", bob.id, alice.id):
            conn.execute("SELECT set_config('app.user_id', %s, false)", (tenant,))
            rows = conn.execute(
                "SELECT count(*) FROM sessions WHERE user_id = %s", (workspace_id,)
            ).fetchone()
            assert rows == (0,), tenant
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM workspace_members")


def test_deleting_a_workspace_shreds_its_key_and_its_sessions(runtime, pg, team):
    vault, alice, bob, _, ws = team
    save(vault, alice, name="gone", workspace=ws)
    workspace_id = workspaces.find(admin_db(), ws)
    from sessionvault.db import identity

    identity.delete_user(admin_db(), workspace_id)
    with psycopg.connect(pg.owner_url) as conn:
        left = conn.execute(
            "SELECT (SELECT count(*) FROM users WHERE id = %(w)s),"
            " (SELECT count(*) FROM sessions WHERE user_id = %(w)s)",
            {"w": workspace_id},
        ).fetchone()
    assert left == (0, 0)
    with pytest.raises(WorkspaceDenied):
        load(vault, bob, name="gone", workspace=ws)


def test_a_workspace_holds_no_api_key_and_no_workspace_belongs_to_another(runtime, team):
    _, alice, _, _, ws = team
    workspace_id = workspaces.find(admin_db(), ws)
    with pytest.raises(psycopg.errors.CheckViolation):
        accounts.create_key(admin_db(), workspace_id, "nope")
    other = new_workspace(runtime, alice)
    with pytest.raises(psycopg.errors.CheckViolation):
        workspaces.set_role(admin_db(), workspaces.find(admin_db(), other), workspace_id, "member", add=True)


def test_the_last_owner_cannot_leave_or_be_demoted(team):
    _, alice, _, _, ws = team
    from sessionvault.errors import AccountError

    workspace_id = workspaces.find(admin_db(), ws)
    with pytest.raises(AccountError, match="last owner"):
        workspaces.remove(admin_db(), workspace_id, alice.id)
    with pytest.raises(AccountError, match="last owner"):
        workspaces.set_role(admin_db(), workspace_id, alice.id, "member", add=False)


def bob_name(user: User) -> str:
    with admin_db().identity() as conn:
        return str(conn.execute("SELECT name FROM users WHERE id = %s", (user.id,)).fetchone()["name"])


def test_a_workspace_exports_and_imports_as_a_space_of_its_own(runtime, team):
    vault, alice, bob, carol, ws = team
    save(vault, alice, name="one", workspace=ws, summary="first")
    save(vault, bob, name="two", workspace=ws, summary="second")
    lines = list(portability.export_lines(vault, bob.principal, ws))
    assert [line.get("name") for line in lines[1:-1]] == ["two", "one"] and lines[-1]["sessions"] == 2
    other = new_workspace(runtime, alice)
    done = portability.import_lines(vault, alice.principal, lines, workspace=other)
    assert (done.versions_added, done.problems) == (2, [])
    assert load(vault, alice, name="one", workspace=other)["summary"] == "first"
    assert load(vault, alice, name="one")["found"] is False  # not into the personal space
    with pytest.raises(WorkspaceDenied):
        list(portability.export_lines(vault, carol.principal, ws))


def test_a_model_learns_its_workspaces_and_its_role_from_the_first_personal_listing(team):
    """Issue 37 item 3: a model had to be told workspace names by hand. The first page of the
    personal listing names each workspace the caller belongs to and the role there (in the
    listing's own flight); a workspace's own listing and later pages do not repeat them."""
    vault, _, bob, carol, ws = team
    assert listed(vault, bob)["workspaces"] == [{"name": ws, "role": "member"}]
    assert "workspaces" not in listed(vault, carol)  # belongs to none
    assert "workspaces" not in listed(vault, bob, workspace=ws)
    with pytest.raises(WorkspaceDenied, match="list_sessions without a workspace names yours"):
        listed(vault, carol, workspace=ws)
