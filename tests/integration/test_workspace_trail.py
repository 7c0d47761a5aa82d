"""A workspace's access trail (issue 37, item 8; docs/teams.md): one row per entry (who, which
access, which tool) and, for every session whose content a member read in it (a load, a claim,
an export's versions), a row naming that session by id, written by the reading statement
itself. Nothing for the personal space; nothing of the name or the text."""

from __future__ import annotations

from sessionvault.core import records
from sessionvault.service import portability

from ..conftest import admin_db
from .test_workspaces import load, save, team

__all__ = ["team"]  # the workspaces test's fixture: alice (owner), bob (member), carol


def trail(workspace: str) -> list[dict]:
    with admin_db().identity() as conn:
        return list(
            conn.execute(
                "SELECT a.user_id::text AS user_id, a.access, a.tool, a.session_id::text AS session_id"
                " FROM workspace_access a JOIN users u ON u.id = a.workspace_id WHERE u.name = %s"
                " ORDER BY a.id",
                (workspace,),
            ).fetchall()
        )


def session_id(workspace: str, name: str) -> str:
    db = admin_db()
    with db.identity() as conn:
        space = conn.execute("SELECT id::text AS id FROM users WHERE name = %s", (workspace,)).fetchone()
    with db.tenant(space["id"]) as conn:  # the sessions are the workspace's rows (row security)
        row = conn.execute("SELECT id::text AS id FROM sessions WHERE name = %s", (name,)).fetchone()
    return str(row["id"])


def test_each_session_a_member_reads_in_a_workspace_is_in_its_trail(team) -> None:
    vault, alice, bob, _, ws = team
    save(vault, alice, name="plan", workspace=ws, summary="v1")
    save(vault, alice, name="plan", workspace=ws, summary="v2")
    save(vault, alice, name="notes", workspace=ws, summary="n")
    plan, notes = session_id(ws, "plan"), session_id(ws, "notes")
    before = len(trail(ws))
    assert load(vault, bob, name="plan", workspace=ws)["summary"] == "v2"
    reads = [r for r in trail(ws)[before:] if r["session_id"]]
    assert reads == [{"user_id": bob.id, "access": "read", "tool": "load_session", "session_id": plan}]

    before = len(trail(ws))
    exported = list(portability.export_lines(vault, bob.principal, ws))
    assert len(exported) >= 3  # the header, then each session with its versions
    read = [r["session_id"] for r in trail(ws)[before:] if r["session_id"]]
    assert sorted(set(read)) == sorted({plan, notes}) and read.count(plan) == 2  # each version read
    assert all(r["user_id"] == bob.id for r in trail(ws)[before:])


def test_the_personal_space_and_a_load_that_finds_nothing_leave_no_read_row(team) -> None:
    vault, alice, _, _, ws = team
    save(vault, alice, name="mine", summary="personal")
    before = trail(ws)
    assert load(vault, alice, name="mine")["summary"] == "personal"
    assert load(vault, alice, name="nothing", workspace=ws)["found"] is False
    assert [r for r in trail(ws)[len(before) :] if r["session_id"]] == []
    assert vault.list(alice.principal, records.parse(records.ListArgs, {}))["sessions"]
