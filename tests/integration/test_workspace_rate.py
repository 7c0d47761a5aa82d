"""A workspace's own rate budget (issue 37, item 8; docs/teams.md): every call into a workspace
spends its member's own budget (the admission) and the workspace's, which its members share
(the entry, `sessionvault_enter_workspace`). Counted once per call, however many transactions
the call makes; a full window refuses the call before it does anything and says whose budget
it was; the personal space is not touched by it."""

from __future__ import annotations

import pytest

from sessionvault.core import records
from sessionvault.errors import WorkspaceBusy

from ..conftest import admin_db, make_user
from .test_workspaces import listed, load, new_workspace, save


def spent(workspace: str) -> int:
    """The calls counted in the workspace's minute window (as the owner reads them)."""
    db = admin_db()
    with db.identity() as conn:
        found = conn.execute("SELECT id::text AS id FROM users WHERE name = %s", (workspace,)).fetchone()
    space = found["id"]
    with db.tenant(space) as conn:  # the counters are the workspace's rows (row security)
        row = conn.execute(
            "SELECT coalesce(sum(hits), 0) AS n FROM rate_counters WHERE user_id = %s"
            " AND span = 'minute' AND slot > now() - interval '1 minute'",
            (space,),
        ).fetchone()
    return int(row["n"])


@pytest.fixture
def small(runtime, monkeypatch: pytest.MonkeyPatch):
    alice, bob = make_user(runtime), make_user(runtime)
    name = new_workspace(runtime, alice, (bob, "member"))
    monkeypatch.setattr(runtime.vault.spaces, "limits", (3, 0))  # three calls a minute, shared
    return runtime.vault, alice, bob, name


def test_members_share_the_workspaces_budget_and_the_call_past_it_does_nothing(small) -> None:
    vault, alice, bob, ws = small
    save(vault, alice, name="plan", workspace=ws, summary="v1")  # a save: several transactions
    assert spent(ws) == 1  # counted once per call
    assert load(vault, bob, name="plan", workspace=ws)["summary"] == "v1"
    assert len(listed(vault, bob, workspace=ws)["sessions"]) == 1
    assert spent(ws) == 3
    with pytest.raises(WorkspaceBusy) as refused:
        save(vault, alice, name="plan", workspace=ws, summary="v2")
    said = str(refused.value)
    assert f"workspace {ws!r} has used its minute budget of 3 calls" in said and "your own budget" in said
    assert 1 <= refused.value.retry_after_s <= 60 and refused.value.error_class == "rate_limit"
    assert spent(ws) == 3  # the refused call counted nothing
    with pytest.raises(WorkspaceBusy):
        load(vault, bob, name="plan", workspace=ws)
    # Nothing of the refused save was written, and the personal spaces do not share the budget.
    save(vault, alice, name="plan", summary="alice's own")
    assert load(vault, alice, name="plan")["summary"] == "alice's own"
    vault.spaces.limits = (0, 0)  # no workspace budget: the workspace answers again
    assert load(vault, bob, name="plan", workspace=ws)["version"] == 1


def test_a_day_budget_refuses_as_the_minute_one_does(small, runtime) -> None:
    vault, alice, _, ws = small
    vault.spaces.limits = (0, 2)
    save(vault, alice, name="a", workspace=ws)
    save(vault, alice, name="b", workspace=ws)
    with pytest.raises(WorkspaceBusy) as refused:
        save(vault, alice, name="c", workspace=ws)
    assert refused.value.window == "day" and refused.value.limit == 2
    assert {s["name"] for s in listed_as_owner(runtime, alice, ws)} == {"a", "b"}


def listed_as_owner(runtime, owner, ws: str) -> list[dict]:
    runtime.vault.spaces.limits = (0, 0)
    return listed(runtime.vault, owner, workspace=ws)["sessions"]


def test_a_non_member_is_refused_as_before_and_spends_nothing(small, runtime) -> None:
    vault, _, _, ws = small
    stranger = make_user(runtime)
    before = spent(ws)
    with pytest.raises(Exception, match="no workspace named"):
        vault.load(stranger.principal, records.parse(records.LoadArgs, {"name": "plan", "workspace": ws}))
    assert spent(ws) == before
