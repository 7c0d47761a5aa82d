"""doctor on hooks: did each installed client's hooks fire lately, when was its last checkpoint
saved, and is its hook support unverified here."""

from __future__ import annotations

from pathlib import Path

from sessionvault.local.hook.capture import fired
from sessionvault.local.setup import doctor_hooks, hooks

NOW = 1_800_000_000.0


def test_a_hook_that_never_ran_is_a_tip_saying_what_to_try() -> None:
    check = doctor_hooks.fired_check("Cline (CLI)", {}, True, now=NOW)
    assert check.ok is None and "have not run here yet" in check.text


def test_recent_runs_and_the_last_saved_checkpoint_are_shown() -> None:
    ran = {
        "session-start": NOW - 30,
        "checkpoint": NOW - 7200,
        "saved": NOW - 2 * 86_400,
        "outcome": "sent x",
    }
    check = doctor_hooks.fired_check("Factory Droid", ran, True, now=NOW)
    assert check.ok is True
    assert check.text == (
        "Factory Droid: session-start hook last ran just now; checkpoint hook 2 hours ago (sent x); "
        "last checkpoint saved 2 days ago"
    )
    stale = doctor_hooks.fired_check("Factory Droid", {"checkpoint": NOW - 30 * 86_400}, True, now=NOW)
    assert stale.ok is None and "last checkpoint saved never" in stale.text
    start_only = doctor_hooks.fired_check("Amazon Q", {"session-start": NOW - 61}, False, now=NOW)
    assert start_only.text == "Amazon Q: session-start hook last ran 1 minute ago"


def test_doctor_lists_fired_and_unverified_for_installed_clients(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    hooks.install_hooks("copilot-cli", home=home, cwd=home)
    hooks.install_hooks("amazon-q", home=home, cwd=home)
    fired.record(state, "copilot-cli", "session-start")
    texts = [c.text for c in doctor_hooks.check_hooks(set(), home=home, cwd=home, state=state)]
    assert any(t.startswith("GitHub Copilot CLI: session-start hook last ran just now") for t in texts), texts
    assert any(t.startswith("Amazon Q Developer CLI: its hooks have not run here yet") for t in texts), texts
    assert any(t.startswith("Amazon Q Developer CLI: hooks unverified here: no real `q`") for t in texts), (
        texts
    )
    assert not any("GitHub Copilot CLI: hooks unverified" in t for t in texts)
