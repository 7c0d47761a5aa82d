"""The hooks run git and the network under short deadlines (repo.GIT_TIMEOUT_S, 2 s a git
call; session_start.TIMEOUT_S, 0.8 s for the whole session start), as they must on a laptop.
A test of what git or the server reports must not depend on a loaded machine meeting them: on
a 2-core machine running the whole suite, git calls ran past 2 s and a drift test failed. So
here every test gets deadlines far beyond any machine's slowness; a test of a deadline itself
sets its own, short one (a parameter, or monkeypatch again), and asserts what the deadline
does, not how fast the machine is."""

from __future__ import annotations

import pytest

from sessionvault.local.hook import repo
from sessionvault.local.hook import session_start as context

GENEROUS_GIT_S = 120.0
GENEROUS_HOOK_S = 120.0


@pytest.fixture(autouse=True)
def _deadlines_the_test_controls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repo, "GIT_TIMEOUT_S", GENEROUS_GIT_S)
    monkeypatch.setattr(context, "TIMEOUT_S", GENEROUS_HOOK_S)
