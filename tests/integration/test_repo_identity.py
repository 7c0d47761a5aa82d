"""One repo identity in the database: the migration that canonicalized stored rows (0006) agrees
with core.repos on every real-world spelling, and rows saved before it are found, listed with
a verified MAC, and claimed under the canonical name."""

from __future__ import annotations

import psycopg
import pytest

from sessionvault.core import records
from sessionvault.core.repos import canonical_repo

from ..unit.core.test_repos import SPELLINGS, WIDGET

SPELLED = "git@github.com:Acme/Widget.git"


def test_the_migrations_sql_twin_agrees_with_core_on_every_spelling(pg) -> None:
    written = [w for w, _ in SPELLINGS]
    with psycopg.connect(pg.owner_url) as conn:
        got = conn.execute(
            "SELECT w, sessionvault_canonical_repo(w) FROM unnest(%s::text[]) AS w", (written,)
        )
        assert dict(got.fetchall()) == {w: canonical_repo(w) for w in written}


def _save_as_before_0006(runtime, who, name: str, repo: str, **more: object) -> None:
    """A save by the code before one repo identity: its repo stored exactly as written."""
    args = records.parse(records.SaveArgs, {"name": name, "summary": f"{name} summary", **more})
    runtime.vault.save(who, args.model_copy(update={"repo": repo}))


def test_rows_saved_before_the_migration_are_found_under_the_canonical_name(pg, runtime, user) -> None:
    who = user.principal
    _save_as_before_0006(runtime, who, "ssh-plan", SPELLED, handoff=True, client="claude-code")
    _save_as_before_0006(runtime, who, "https-notes", "https://github.com/acme/widget/")
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:
        conn.execute("SELECT sessionvault_canonicalize_repos()")

    listed = runtime.vault.list(who, records.parse(records.ListArgs, {"repo": "github.com/acme/widget"}))
    entries = {e["name"]: e for e in listed["sessions"]}
    assert set(entries) == {"ssh-plan", "https-notes"}
    assert all(e["repo"] == WIDGET and "unverified" not in e for e in entries.values())  # the MAC holds
    assert entries["ssh-plan"]["preview"] == "ssh-plan summary"

    claimed = runtime.vault.load(
        who, records.parse(records.LoadArgs, {"repo": "https://GitHub.com/acme/widget", "accept": True})
    )
    assert claimed["found"] and claimed["name"] == "ssh-plan" and claimed["repo"] == WIDGET


def test_saving_again_replaces_the_old_spelling(pg, runtime, user) -> None:
    who = user.principal
    _save_as_before_0006(runtime, who, "resaved", SPELLED)
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:
        conn.execute("SELECT sessionvault_canonicalize_repos()")
    runtime.vault.save(
        who, records.parse(records.SaveArgs, {"name": "resaved", "summary": "v2", "repo": SPELLED})
    )
    listed = runtime.vault.list(who, records.parse(records.ListArgs, {"repo": WIDGET}))
    (entry,) = [e for e in listed["sessions"] if e["name"] == "resaved"]
    assert (entry["version"], entry["preview"], entry.get("unverified")) == (2, "v2", None)


@pytest.mark.parametrize("form", ["git@github.com:acme/widget.git", "https://github.com/Acme/Widget"])
def test_a_listing_takes_any_spelling(runtime, user, form: str) -> None:
    who = user.principal
    runtime.vault.save(who, records.parse(records.SaveArgs, {"name": "n", "summary": "s", "repo": SPELLED}))
    listed = runtime.vault.list(who, records.parse(records.ListArgs, {"repo": form}))
    assert [e["name"] for e in listed["sessions"]] == ["n"]
