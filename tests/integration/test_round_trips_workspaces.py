"""The round-trip budget of workspace calls, pinned as personal calls are (test_round_trips.py):
on a warm instance a workspace tool call is one flight (a search one more, for its heads), its
entry into the workspace queued in the tool's own transaction after the riding admission; and
removing a member takes effect on that member's next call over HTTP, though the instance still
holds their admission and the workspace's name."""

from __future__ import annotations

import os

from sessionvault.db import workspaces
from sessionvault.service import accounts

from ..conftest import admin_db, make_user
from .test_round_trips import Served, served  # noqa: F401 (the fixture)


def test_a_warm_workspace_call_costs_one_round_trip_and_removal_holds_on_the_next_call(served):  # noqa: F811
    alice, bob = make_user(served.rt), make_user(served.rt)
    name = f"rt-team-{os.urandom(3).hex()}"
    workspace_id = accounts.create_workspace(admin_db(), served.rt.keys.provider, name, alice.id)
    workspaces.set_role(admin_db(), workspace_id, bob.id, "member", add=True)
    as_alice = Served(served.proxy, served.server, served.rt, alice.key)
    as_bob = Served(served.proxy, served.server, served.rt, bob.key)
    # first calls: the admission, then the workspace's name resolved once, then the tool
    as_alice.tool("save_session", name="plan", summary="s", repo="github.com/a/b", workspace=name)
    as_bob.tool("list_sessions", workspace=name)
    measured = {
        "save": as_alice.tool("save_session", name="plan", summary="t", workspace=name),
        "load by name": as_bob.tool("load_session", name="plan", workspace=name),
        "load latest for repo": as_bob.tool("load_session", repo="github.com/a/b", workspace=name),
        "list": as_bob.tool("list_sessions", workspace=name),
        "search": as_bob.tool("search_sessions", query="s", workspace=name) - 1,  # its second: the heads
    }
    assert set(measured.values()) == {1}, measured

    workspaces.remove(admin_db(), workspace_id, bob.id)
    reply = as_bob.post(
        "tools/call", {"name": "load_session", "arguments": {"name": "plan", "workspace": name}}
    ).json()
    assert reply["result"]["isError"] is True
    assert "no workspace named" in reply["result"]["content"][0]["text"]
    fresh = as_bob.post("tools/call", {"name": "list_sessions", "arguments": {"workspace": "never-existed"}})
    assert (
        fresh.json()["result"]["content"][0]["text"].replace("never-existed", name)
        == (reply["result"]["content"][0]["text"])
    )
