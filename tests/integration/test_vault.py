"""The vault against the real database as the app role: history, exact loads, failures."""

import psycopg
import pytest

from sessionvault.core import records
from sessionvault.errors import DecryptionFailed, ProviderUnavailable, ValidationFailed
from sessionvault.service.vault import Vault

from ..conftest import make_user


def save(vault, who, **fields):
    return vault.save(who, records.parse(records.SaveArgs, {"summary": "s", **fields}))


def load(vault, who, **fields):
    return vault.load(who, records.parse(records.LoadArgs, fields))


def test_saving_a_name_again_keeps_earlier_versions(runtime, user):
    vault, who = runtime.vault, user.principal
    assert save(vault, who, name="plan", summary="first", plan=["a"])["version"] == 1
    assert save(vault, who, name="plan", summary="second", plan=["b"])["version"] == 2
    latest = load(vault, who, name="plan")
    assert (latest["version"], latest["summary"], latest["plan"], latest["versions"]) == (
        2,
        "second",
        ["b"],
        [2, 1],
    )
    first = load(vault, who, name="plan", version=1)
    assert (first["summary"], first["plan"], first["latest_version"]) == ("first", ["a"], 2)


def test_history_is_pruned_to_the_configured_depth(runtime, user):
    vault = Vault(runtime.db, runtime.keys, runtime.vault.embedder, history_keep=3)
    for i in range(6):
        save(vault, user.principal, name="loop", summary=f"v{i + 1}")
    assert load(vault, user.principal, name="loop")["versions"] == [6, 5, 4, 3]
    assert load(vault, user.principal, name="loop", version=2)["found"] is False


def test_load_is_exact_and_never_a_near_miss(runtime, user):
    save(runtime.vault, user.principal, name="auth-jwt-v1", summary="jwt")
    miss = load(runtime.vault, user.principal, name="auth-jwt")
    assert miss["found"] is False
    assert "list_sessions" in miss["hint"]
    assert load(runtime.vault, user.principal, name="AUTH-JWT-V1")["found"] is False


def test_latest_for_repo_and_modes(runtime, user):
    who = user.principal
    save(runtime.vault, who, name="old", repo="github.com/o/app", summary="older")
    save(runtime.vault, who, name="other-repo", repo="github.com/o/lib", summary="lib work")
    save(runtime.vault, who, name="new", repo="github.com/o/app", summary="newest", todos=["ship"])
    latest = load(runtime.vault, who, repo="github.com/o/app")
    assert (latest["name"], latest["todos"]) == ("new", ["ship"])
    brief = load(runtime.vault, who, repo="github.com/o/app", mode="brief")
    assert brief["summary"] == "newest" and "todos" not in brief
    assert load(runtime.vault, who, repo="github.com/o/none")["found"] is False


def test_list_paginates_newest_first_from_the_preview(runtime, user):
    for i in range(5):
        save(runtime.vault, user.principal, name=f"s{i}", summary=f"summary {i} " + "x" * 200)
    first = runtime.vault.list(user.principal, records.parse(records.ListArgs, {"limit": 2}))
    assert [s["name"] for s in first["sessions"]] == ["s4", "s3"]
    assert len(first["sessions"][0]["preview"]) == 120
    rest = runtime.vault.list(
        user.principal, records.parse(records.ListArgs, {"limit": 10, "cursor": first["next_cursor"]})
    )
    assert [s["name"] for s in rest["sessions"]] == ["s2", "s1", "s0"]
    assert rest["next_cursor"] == ""


def test_delete_removes_every_version(runtime, user):
    for i in range(3):
        save(runtime.vault, user.principal, name="gone", summary=f"s{i}")
    out = runtime.vault.delete(user.principal, records.parse(records.DeleteArgs, {"name": "gone"}))
    assert out == {"deleted": True, "name": "gone", "versions_deleted": 3}
    assert load(runtime.vault, user.principal, name="gone")["found"] is False
    with runtime.db.tenant(user.id) as conn:
        assert conn.execute("SELECT count(*) AS n FROM session_versions").fetchone()["n"] == 0
    again = runtime.vault.delete(user.principal, records.parse(records.DeleteArgs, {"name": "gone"}))
    assert again["found"] is False


class BrokenEmbedder:
    model = "local:all-MiniLM-L6-v2"

    def embed(self, text):
        return None  # what every provider returns on an error or a timeout


def test_embedding_failure_still_saves_and_search_finds_the_row_by_its_words(local_runtime):
    who = make_user(local_runtime).principal
    broken = Vault(local_runtime.db, local_runtime.keys, BrokenEmbedder())
    out = save(broken, who, name="no-vector", summary="database connection pooling")
    assert out["embedded"] is False and out["version"] == 1
    assert load(local_runtime.vault, who, name="no-vector")["summary"] == "database connection pooling"
    save(local_runtime.vault, who, name="with-vector", summary="connection pool tuning for postgres")
    hits = local_runtime.vault.search(who, records.parse(records.SearchArgs, {"query": "connection pooling"}))
    found = {h["name"]: h for h in hits["results"]}
    assert set(found) == {"with-vector", "no-vector"}
    assert found["no-vector"]["matched"] == "keyword" and "score" not in found["no-vector"]  # no vector
    assert found["with-vector"]["matched"] in ("meaning", "both") and found["with-vector"]["score"] > 0


def test_without_an_embedding_provider_search_answers_by_keyword_and_says_so(local_runtime):
    who = make_user(local_runtime).principal
    save(local_runtime.vault, who, name="pool", summary="raised max_connections after ERR_POOL_EXHAUSTED")
    save(local_runtime.vault, who, name="css", summary="sidebar collapses on mobile")
    broken = Vault(local_runtime.db, local_runtime.keys, BrokenEmbedder())
    out = broken.search(who, records.parse(records.SearchArgs, {"query": "ERR_POOL_EXHAUSTED again"}))
    assert [(h["name"], h["matched"]) for h in out["results"]] == [("pool", "keyword")]
    assert "words only" in out["notice"]
    with pytest.raises(ProviderUnavailable):  # nothing to match by meaning nor by word
        broken.search(who, records.parse(records.SearchArgs, {"query": "the"}))


def test_a_ciphertext_moved_to_another_row_fails(runtime, pg, user):
    save(runtime.vault, user.principal, name="a", summary="secret plan a")
    save(runtime.vault, user.principal, name="b", summary="plan b")
    # An attacker with write access to the table swaps b's content for a's.
    with psycopg.connect(pg.owner_url) as conn:
        conn.execute("SELECT set_config('app.user_id', %s, false)", (user.id,))
        conn.execute(
            """UPDATE session_versions v SET nonce = src.nonce, ciphertext = src.ciphertext
               FROM session_versions src
               JOIN sessions s ON s.id = src.session_id AND s.name = 'a' AND s.user_id = %(user)s
               WHERE v.session_id = (SELECT id FROM sessions WHERE name = 'b' AND user_id = %(user)s)""",
            {"user": user.id},  # the owner may be a superuser (no RLS): other tests' "b" stay out
        )
    with pytest.raises(DecryptionFailed):
        load(runtime.vault, user.principal, name="b")


def test_search_packs_results_into_the_token_budget(local_runtime):
    who = make_user(local_runtime).principal
    for i in range(4):
        save(local_runtime.vault, who, name=f"cache-{i}", summary=f"redis cache layer {i} " + "detail " * 60)
    unbounded = local_runtime.vault.search(who, records.parse(records.SearchArgs, {"query": "redis cache"}))
    assert len(unbounded["results"]) == 4
    budget = local_runtime.vault.search(
        who, records.parse(records.SearchArgs, {"query": "redis cache", "max_tokens": 250})
    )
    assert 1 <= len(budget["results"]) < 4
    assert budget["estimated_tokens"] <= 250
    assert budget["omitted"] == 4 - len(budget["results"])


def test_pagination_survives_a_save_between_pages_and_refuses_bad_cursors(runtime, user):
    for i in range(4):
        save(runtime.vault, user.principal, name=f"p{i}", summary="s")
    first = runtime.vault.list(user.principal, records.parse(records.ListArgs, {"limit": 2}))
    save(runtime.vault, user.principal, name="p0", summary="touched: now the newest")
    args = {"limit": 10, "cursor": first["next_cursor"]}
    rest = runtime.vault.list(user.principal, records.parse(records.ListArgs, args))
    seen = [s["name"] for s in first["sessions"] + rest["sessions"]]
    assert seen == ["p3", "p2", "p1"]  # no duplicate; p0, saved again, moved to the front
    for bad in ("²", "9" * 20, "bm90IGEgY3Vyc29y"):
        with pytest.raises(ValidationFailed, match="cursor"):
            runtime.vault.list(user.principal, records.parse(records.ListArgs, {"cursor": bad}))


def test_a_version_without_a_name_is_refused():
    with pytest.raises(ValidationFailed, match="version: give the session's name too"):
        records.parse(records.LoadArgs, {"repo": "r", "version": 2})


def test_search_without_a_provider_is_a_provider_error(runtime, user):
    with pytest.raises(ProviderUnavailable) as exc:
        runtime.vault.search(user.principal, records.parse(records.SearchArgs, {"query": "q"}))
    assert exc.value.error_class == "provider" and "list_sessions" in str(exc.value)


def test_a_pruned_version_is_named_as_pruned_with_the_versions_kept(runtime, user):
    vault = Vault(runtime.db, runtime.keys, runtime.vault.embedder, history_keep=2)
    for i in range(5):
        save(vault, user.principal, name="kept", summary=f"v{i + 1}")
    miss = load(vault, user.principal, name="kept", version=1)
    assert miss["found"] is False and miss["versions"] == [5, 4, 3]
    assert (
        miss["hint"]
        == "session 'kept' has no version 1 (older versions are pruned); it keeps versions 5, 4, 3"
    )
    beyond = load(vault, user.principal, name="kept", version=9)
    assert beyond["hint"] == "session 'kept' has no version 9; it keeps versions 5, 4, 3"


@pytest.mark.parametrize("budget", [150, 250, 600])
def test_a_load_budget_covers_the_whole_text_the_model_receives(runtime, user, budget):
    """max_tokens counts what is sent (the notes frame included) and says what it cut; below
    the size of the empty answer itself, everything is dropped and the size said honestly."""
    from sessionvault.core import framing

    save(runtime.vault, user.principal, name="budgeted", summary="s" * 900, tried=["t" * 300] * 10)
    out = load(runtime.vault, user.principal, name="budgeted", max_tokens=budget)
    sent = len(framing.frame_json(out)) / 4
    assert abs(sent - out["estimated_tokens"]) <= 2  # the estimate is of what is sent
    if out["estimated_tokens"] > budget:  # not even the empty shape fits
        assert out["summary"] == "" and out["dropped"] == ["summary"] and "truncated" not in out
    else:
        assert sent <= budget
        labels = out.get("truncated", []) + out.get("dropped", [])
        assert out["summary"] == "s" * 900 or labels == ["summary"]
        assert ("summary" in out.get("dropped", [])) == (out["summary"] == "")
