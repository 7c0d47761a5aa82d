"""The round-trip budget holds with handoffs: offering one adds no flight to a save, and a
claim (won or lost) costs what any load costs: one flight, the admission riding on it."""

from __future__ import annotations

from .test_round_trips import BUDGET, served  # noqa: F401  (the module's fixture, reused)


def test_offering_and_claiming_a_handoff_cost_what_a_save_and_a_load_cost(served):  # noqa: F811
    repo = "github.com/a/handoff"
    saved = served.tool("save_session", name="rt-offer", summary="s", repo=repo, handoff=True)
    assert saved == BUDGET["save_session"]
    measured = {
        "look": served.tool("load_session", repo=repo),
        "accept (won)": served.tool("load_session", repo=repo, accept=True, client="a"),
        "accept (lost)": served.tool("load_session", repo=repo, accept=True, client="b"),
        "budgeted": served.tool("load_session", name="rt-offer", max_tokens=50),
        "list": served.tool("list_sessions"),
    }
    assert set(measured.values()) == {BUDGET["load_session"]}, measured
