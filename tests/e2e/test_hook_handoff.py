"""End to end: the session-start hook, run as a process in a real git checkout against the real
server, shows an open handoff with the call that accepts it and how far the code moved since the
handoff's commit; and it only looks: the offer stays open until a client accepts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from sessionvault import names
from sessionvault.local.hook import session_start as context
from sessionvault.local.hook.repo import current_branch, current_commit, current_repo

from ..conftest import mcp_client

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _isolated(isolated_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(names.URL_ENV, raising=False)
    monkeypatch.delenv(names.KEY_ENV, raising=False)


def git(path: Path, *args: str) -> str:
    who = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
    done = subprocess.run(["git", "-C", str(path), *who, *args], check=True, capture_output=True, text=True)
    return done.stdout.strip()


def commit(path: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)
    return git(path, "rev-parse", "HEAD")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout of github.com/acme/shop-drift on main with one commit, as a client's cwd."""
    path = tmp_path / "shop"
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    git(path, "remote", "add", "origin", "git@github.com:acme/shop-drift.git")
    commit(path, {"README.md": "shop\n", "src/cart.py": "cart = []\n"}, "start")
    return path


def run_hook(url: str, key: str, cwd: Path, client: str) -> str:
    """`sessionvault hook session-start --client <client>` as a process in the checkout."""
    argv = ["session-start", "--client", client, "--url", url]
    code = f"from sessionvault.cli.hook import main; raise SystemExit(main({argv!r}))"
    env = {**os.environ, names.KEY_ENV: key}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=30
    )
    assert done.returncode == 0 and done.stderr == ""
    out = json.loads(done.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    text: str = out["hookSpecificOutput"]["additionalContext"]
    return text


async def hook(url: str, key: str, cwd: Path, client: str = "claude-code") -> str:
    return await anyio.to_thread.run_sync(partial(run_hook, url, key, cwd, client))


async def call(url: str, key: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    async with mcp_client(url, key) as client:
        result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    out: dict[str, Any] = result.structured_content
    return out


def lines_of(text: str) -> tuple[list[str], list[str]]:
    """(our own lines before the fenced notes, the lines inside them)."""
    lines = text.split("\n")
    [opening] = [i for i, line in enumerate(lines) if line.startswith("````sessionvault-notes-")]
    return lines[:opening], lines[opening + 1 : -1]


async def test_the_hook_shows_an_open_handoff_with_drift_and_never_claims_it(server, user, checkout) -> None:
    repo = current_repo(checkout)
    saved_at = current_commit(checkout)
    assert repo == "github.com/acme/shop-drift" and saved_at and current_branch(checkout) == "main"
    save = {
        "name": "drift-handoff",
        "repo": repo,
        "summary": "Cart extracted; payment next",
        "todos": ["write the payment service"],
        "client": "cursor",
        "branch": current_branch(checkout),
        "commit": saved_at,
        "handoff": True,
    }
    assert (await call(server.url, user.key, "save_session", save))["handoff"]["state"] == "open"

    # The code moves on: two commits touching three files, then a branch of its own.
    commit(checkout, {"src/cart.py": "cart = {}\n", "src/payment.py": "pay = 1\n"}, "payment")
    head = commit(checkout, {"README.md": "shop, now with payments\n"}, "docs")
    git(checkout, "checkout", "-q", "-b", "payments")

    for _ in range(2):  # looking, twice: the hook never claims
        text = await hook(server.url, user.key, checkout)
        assert len(text) <= context.CONTEXT_CAP
        outside, inside = lines_of(text)
        own = "\n".join(outside)
        assert "**Open handoff** for any client, open until " in own
        assert (
            "To take it over, call load_session with repo='github.com/acme/shop-drift', accept=true, "
            "client='claude-code'; that claims it exactly once" in own
        )
        # The checkout's own file and branch names (a cloned repo chooses them) stay inside the notes.
        [drift] = [line for line in inside if line.startswith("**Code since it was saved:**")]
        assert not [line for line in outside if line.startswith("**Code since")]
        assert drift.startswith(
            f"**Code since it was saved:** 2 commits since commit {saved_at[:12]} (HEAD now {head[:12]}); "
            "3 files changed (committed or not): "
        )
        for name in ("`README.md`", "`src/cart.py`", "`src/payment.py`"):
            assert name in drift
        assert drift.endswith("now on branch `payments`, not the one it was saved on (see the notes).")
        assert f"**Saved on:** branch `main`, commit {saved_at}" in inside
        assert "**Summary:** Cart extracted; payment next" in inside
        assert "Cart extracted" not in own  # saved text only inside the notes

    # The offer is still there for whoever accepts first: a later accept wins.
    won = await call(server.url, user.key, "load_session", {"repo": repo, "accept": True, "client": "codex"})
    assert won["found"] is True and won["name"] == "drift-handoff"
    assert won["handoff"]["accepted_by"] == "codex" and won["commit"] == saved_at

    after = await hook(server.url, user.key, checkout)
    assert "Open handoff" not in after and "accept=true" not in after
    assert "**Code since it was saved:** 2 commits since commit" in after  # drift still shown


async def test_a_targeted_handoff_shows_only_to_its_client(server, user, checkout) -> None:
    save = {
        "name": "for-gemini",
        "repo": current_repo(checkout),
        "summary": "over to gemini",
        "branch": "main",
        "commit": current_commit(checkout),
        "to_client": "gemini",
    }
    await call(server.url, user.key, "save_session", save)
    mine = await hook(server.url, user.key, checkout, "gemini")
    assert "**Open handoff** for this client (gemini)" in mine and "client='gemini'" in mine
    assert "**Code since it was saved:** unchanged: HEAD is at commit" in mine
    theirs = await hook(server.url, user.key, checkout, "codex")
    assert "Open handoff" not in theirs and "over to gemini" in theirs


async def test_a_handoff_commit_missing_from_this_clone_is_reported(server, user, checkout) -> None:
    unknown = "0123456789abcdef0123456789abcdef01234567"
    save = {
        "name": "elsewhere",
        "repo": current_repo(checkout),
        "summary": "s",
        "commit": unknown,
        "handoff": True,
    }
    await call(server.url, user.key, "save_session", save)
    text = await hook(server.url, user.key, checkout)
    assert "**Open handoff**" in text
    assert f"commit {unknown[:12]} is not in this clone" in text


async def test_a_handoff_saved_in_one_spelling_is_shown_and_claimed_in_another(
    server, user, tmp_path
) -> None:
    """The core loop across spellings: a model saves with the ssh remote (what the handoff prompt
    asks for), the next client's clone has the https remote, and it claims with a third form."""
    clone = tmp_path / "widget"
    subprocess.run(["git", "init", "-q", "-b", "main", str(clone)], check=True)
    git(clone, "remote", "add", "origin", "https://github.com/Acme/Widget")
    commit(clone, {"README.md": "widget\n"}, "start")
    save = {"name": "ssh-spelled", "repo": "git@github.com:acme/widget.git", "summary": "over to you"}
    saved = await call(server.url, user.key, "save_session", {**save, "handoff": True, "client": "cursor"})
    assert saved["handoff"]["state"] == "open"

    text = await hook(server.url, user.key, clone)
    assert "**Open handoff**" in text and "repo='github.com/acme/widget'" in text
    claim = {"repo": "ssh://git@github.com:22/ACME/widget", "accept": True, "client": "claude-code"}
    won = await call(server.url, user.key, "load_session", claim)
    assert won["found"] and won["name"] == "ssh-spelled" and won["repo"] == "github.com/acme/widget"
