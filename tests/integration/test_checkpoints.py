"""Automatic checkpoints on the server (core/checkpoints.py): saves that change nothing add no
version, and checkpoints never crowd out what people saved on purpose."""

from __future__ import annotations

from dataclasses import replace

import psycopg
import pytest

from sessionvault.core import records
from sessionvault.core.checkpoints import AUTO_HISTORY, AUTO_KEEP, AUTO_MAX_AGE_DAYS
from sessionvault.db.saves import Quota
from sessionvault.errors import QuotaExceeded, ScopeMissing, ValidationFailed
from sessionvault.service import vault as vault_module
from sessionvault.service.principal import Principal
from sessionvault.service.vault import Vault

from ..conftest import hook_key
from ..support.jsonrpc import tool_result

REPO = "github.com/acme/widget"


def save(vault: Vault, who, **fields):
    """A save; an auto/<client>/... name goes the hooks' path, as that client."""
    automatic = fields["name"].startswith("auto/")
    client = {"client": fields["name"].split("/")[1]} if automatic else {}
    args = records.parse(records.SaveArgs, {"summary": "s", "repo": REPO, **client, **fields})
    return vault.save(who, args, checkpoint=automatic)


def names(vault: Vault, who) -> list[str]:
    listed = vault.list(who, records.parse(records.ListArgs, {"repo": REPO, "limit": 100}))
    return [e["name"] for e in listed["sessions"]]


def test_saving_the_same_content_again_adds_no_version(runtime, user) -> None:
    first = save(runtime.vault, user.principal, name="plan", plan=["a"])
    again = save(runtime.vault, user.principal, name="plan", plan=["a"])
    assert (first["version"], again["version"], again.get("unchanged")) == (1, 1, True)
    assert again["saved_at"] == first["saved_at"]
    changed = save(runtime.vault, user.principal, name="plan", plan=["a", "b"])
    assert changed["version"] == 2 and "unchanged" not in changed


def test_an_offer_is_always_a_new_version_even_with_the_same_content(runtime, user) -> None:
    save(runtime.vault, user.principal, name="offer")
    offered = save(runtime.vault, user.principal, name="offer", handoff=True)
    assert offered["version"] == 2 and offered["handoff"]["state"] == "open"


def test_checkpoints_are_marked_and_keep_a_short_history(runtime, user) -> None:
    for i in range(AUTO_HISTORY + 3):
        saved = save(runtime.vault, user.principal, name="auto/codex/s1", summary=f"turn {i}")
    assert saved["automatic"] is True
    loaded = runtime.vault.load(user.principal, records.parse(records.LoadArgs, {"name": "auto/codex/s1"}))
    assert loaded["automatic"] is True and len(loaded["versions"]) == AUTO_HISTORY + 1
    listed = runtime.vault.list(user.principal, records.parse(records.ListArgs, {"repo": REPO}))
    assert [e.get("automatic") for e in listed["sessions"]] == [True]


def test_only_the_newest_checkpoints_of_a_repo_and_client_survive(runtime, user) -> None:
    save(runtime.vault, user.principal, name="deliberate")
    for i in range(AUTO_KEEP + 2):
        save(runtime.vault, user.principal, name=f"auto/claude-code/s{i}")
    save(runtime.vault, user.principal, name="auto/gemini/g1")
    save(runtime.vault, user.principal, name="auto/claude-code/other-repo", repo="github.com/acme/other")
    kept = names(runtime.vault, user.principal)
    newest = [f"auto/claude-code/s{i}" for i in range(AUTO_KEEP + 1, 1, -1)]
    assert kept == ["auto/gemini/g1", *newest, "deliberate"]


def test_checkpoints_do_not_count_toward_the_session_quota(runtime, user) -> None:
    vault = Vault(runtime.db, runtime.keys, runtime.vault.embedder, quota=Quota(sessions=2, bytes=10**9))
    for i in range(5):
        save(vault, user.principal, name=f"auto/qwen/q{i}", repo=f"github.com/acme/r{i}")
    save(vault, user.principal, name="one")
    save(vault, user.principal, name="two")  # both deliberate sessions still fit
    try:
        save(vault, user.principal, name="three")
    except QuotaExceeded:
        pass
    else:
        raise AssertionError("the third deliberate session passed a quota of two")
    runtime.vault.delete(user.principal, records.parse(records.DeleteArgs, {"name": "auto/qwen/q0"}))
    save(vault, user.principal, name="auto/qwen/q9")  # deleting a checkpoint freed no session slot
    try:
        save(vault, user.principal, name="three")
    except QuotaExceeded:
        return
    raise AssertionError("deleting a checkpoint gave back a session slot it never took")


def test_a_checkpoint_save_also_drops_the_users_checkpoints_older_than_a_month(pg, runtime, user) -> None:
    save(runtime.vault, user.principal, name="auto/codex/stale", repo="github.com/acme/old")
    save(runtime.vault, user.principal, name="deliberate-and-old", repo="github.com/acme/old")
    with psycopg.connect(pg.owner_url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT set_config('app.user_id', %s, true)", (user.id,))
        aged = conn.execute(
            "UPDATE sessions SET updated_at = now() - (%s + 1) * interval '1 day' WHERE user_id = %s",
            (AUTO_MAX_AGE_DAYS, user.id),
        )
        assert aged.rowcount == 2
    save(runtime.vault, user.principal, name="auto/codex/fresh")
    listed = runtime.vault.list(user.principal, records.parse(records.ListArgs, {"limit": 100}))
    assert {e["name"] for e in listed["sessions"]} == {"auto/codex/fresh", "deliberate-and-old"}


def test_only_the_checkpoint_path_saves_automatic_sessions(runtime, user):
    """Issue 27 item 2: "automatic" is a fact of how a session was saved (the hooks' unlisted
    checkpoint_session), never a name a caller chose: save_session refuses auto/ names, and the
    checkpoint path takes nothing else."""
    from sessionvault.server.mcp import tools

    auto = records.parse(
        records.SaveArgs, {"name": "auto/claude-code/x", "summary": "s", "client": "claude-code"}
    )
    with pytest.raises(ValidationFailed, match="kept for automatic checkpoints"):
        runtime.vault.save(user.principal, auto)
    plain = records.parse(records.SaveArgs, {"name": "plan", "summary": "s"})
    with pytest.raises(ValidationFailed, match="starts with auto/"):
        runtime.vault.save(user.principal, plain, checkpoint=True)
    assert runtime.vault.save(user.principal, auto, checkpoint=True)["automatic"] is True
    listed = {tool.name for tool in tools.definitions()}
    assert "checkpoint_session" not in listed and "save_session" in listed
    assert tools.scope_of("checkpoint_session") == "checkpoint"


# ---------------------------------------------------------------- issue 35, item 1


def hooks_principal(user, scopes=("read", "checkpoint")) -> Principal:
    return replace(user.principal, scopes=frozenset(scopes))


def test_a_model_facing_key_can_neither_save_nor_prune_checkpoints(server, runtime, user) -> None:
    """The review's attack: three checkpoint_session calls with a read,write,delete key named
    auto/claude-code/evil-N deleted the three real checkpoints of that repo. Now the call is
    refused for want of the hooks' scope, and the real ones stay."""
    hooks = hook_key(user)
    for i in range(AUTO_KEEP):
        args = {"name": f"auto/claude-code/real-{i}", "summary": "s", "repo": REPO, "client": "claude-code"}
        assert not tool_result(server.url, hooks, "checkpoint_session", **args)["isError"]
    for i in range(AUTO_KEEP):
        args = {"name": f"auto/claude-code/evil-{i}", "summary": "s", "repo": REPO, "client": "claude-code"}
        out = tool_result(server.url, user.key, "checkpoint_session", **args)
        assert out["isError"] and "'checkpoint' scope" in out["content"][0]["text"]
        assert "connect <client> --hooks" in out["content"][0]["text"]
    assert names(runtime.vault, user.principal) == [
        f"auto/claude-code/real-{i}" for i in reversed(range(AUTO_KEEP))
    ]


def test_a_checkpoint_is_personal_never_offered_and_named_for_its_client(runtime, user) -> None:
    who = hooks_principal(user)
    base = {"name": "auto/codex/s1", "summary": "s", "repo": REPO, "client": "codex"}
    for extra in ({"handoff": True}, {"to_client": "gemini-cli"}, {"workspace": "team"}):
        args = records.parse(records.SaveArgs, {**base, **extra})
        with pytest.raises(ValidationFailed, match="personal and never offered"):
            runtime.vault.save(who, args, checkpoint=True)
    posing = records.parse(records.SaveArgs, {**base, "client": "claude-code"})
    with pytest.raises(ValidationFailed, match="auto/<client>/"):
        runtime.vault.save(who, posing, checkpoint=True)
    writer = hooks_principal(user, ("read", "write", "delete"))
    with pytest.raises(ScopeMissing):
        runtime.vault.save(writer, records.parse(records.SaveArgs, base), checkpoint=True)
    assert runtime.vault.save(who, records.parse(records.SaveArgs, base), checkpoint=True)["automatic"]


def test_checkpoints_have_a_quota_of_their_own_and_a_new_one_deletes_no_other(
    runtime, user, monkeypatch
) -> None:
    """Thirty calls used to leave no checkpoint in any repo: the cap pruned across repos and
    clients. Now a full quota refuses the new checkpoint and deletes nothing; a slot that is
    full still takes its newest (its own oldest goes)."""
    monkeypatch.setattr(vault_module, "AUTO_MAX_TOTAL", AUTO_KEEP + 1)
    save(runtime.vault, user.principal, name="auto/gemini/g1", repo="github.com/acme/other")
    for i in range(AUTO_KEEP):
        save(runtime.vault, user.principal, name=f"auto/codex/c{i}")
    with pytest.raises(QuotaExceeded, match="checkpoint quota reached"):
        save(runtime.vault, user.principal, name="auto/qwen/q1", repo="github.com/acme/third")
    save(runtime.vault, user.principal, name=f"auto/codex/c{AUTO_KEEP}")  # its own slot makes room
    listed = runtime.vault.list(user.principal, records.parse(records.ListArgs, {"limit": 100}))
    assert {e["name"] for e in listed["sessions"]} == {
        "auto/gemini/g1",
        *(f"auto/codex/c{i}" for i in range(1, AUTO_KEEP + 1)),
    }
