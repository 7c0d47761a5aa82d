"""Scoped keys, two-stage destruction and quotas, as a client meets them over real HTTP."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg

from sessionvault.runtime import open_runtime
from sessionvault.service import purge

from ..conftest import ServerThread, make_settings, make_user
from ..support.jsonrpc import post, tool_result

call = tool_result


def tools_of(url: str, key: str) -> set[str]:
    return {t["name"] for t in post(url, key, "tools/list").json()["result"]["tools"]}


def audit_classes(pg, user_id: str) -> list[tuple[str, str | None]]:
    with psycopg.connect(pg.owner_url) as conn:
        rows = conn.execute(
            "SELECT tool, error_class FROM audit_events WHERE user_id = %s ORDER BY id", (user_id,)
        ).fetchall()
    return [(tool, cls) for tool, cls in rows]


def test_a_read_only_key_sees_and_calls_only_the_read_tools(server, runtime, pg):
    reader = make_user(runtime, scopes=("read",))
    assert tools_of(server.url, reader.key) == {"load_session", "search_sessions", "list_sessions"}
    refused = call(server.url, reader.key, "save_session", name="x", summary="s")
    assert refused["isError"] and "'write' scope" in refused["content"][0]["text"]
    assert not call(server.url, reader.key, "list_sessions")["isError"]
    assert ("save_session", "scope") in audit_classes(pg, reader.id)


def test_a_new_key_reads_and_writes_but_cannot_delete(server, runtime):
    writer = make_user(runtime, scopes=("read", "write"))
    assert not call(server.url, writer.key, "save_session", name="keep", summary="s")["isError"]
    refused = call(server.url, writer.key, "delete_session", name="keep")
    assert refused["isError"] and "'delete' scope" in refused["content"][0]["text"]
    assert call(server.url, writer.key, "load_session", name="keep")["structuredContent"]["found"]


def test_the_scope_hint_keeps_the_scopes_the_key_already_has(server, runtime):
    writer = make_user(runtime, scopes=("read", "write"))
    refused = call(server.url, writer.key, "delete_session", name="keep")["content"][0]["text"]
    assert refused.endswith("sessionvault key create --scope read,write,delete")


def test_a_read_only_key_can_look_at_a_handoff_but_not_claim_it(server, runtime, pg):
    """Claiming changes the handoff's state: it needs `write`, and the claim records the key
    that made it beside the client name the caller gave (which is only self-declared)."""
    owner = make_user(runtime)
    reader = make_user(runtime, scopes=("read",))
    with psycopg.connect(pg.owner_url) as conn:  # the reader as a second key of the same user
        conn.execute("UPDATE api_keys SET user_id = %s WHERE user_id = %s", (owner.id, reader.id))
    call(server.url, owner.key, "save_session", name="h", summary="s", repo="github.com/a/b", handoff=True)
    looked = call(server.url, reader.key, "load_session", repo="github.com/a/b")["structuredContent"]
    assert looked["found"] and looked["handoff"]["state"] == "open"
    refused = call(server.url, reader.key, "load_session", repo="github.com/a/b", accept=True, client="codex")
    assert refused["isError"] and "lacks the 'write' scope" in refused["content"][0]["text"]
    won = call(server.url, owner.key, "load_session", repo="github.com/a/b", accept=True, client="codex")
    handoff = won["structuredContent"]["handoff"]
    assert (handoff["accepted_by"], handoff["accepted_with"]) == ("codex", owner.key[:12])


def test_delete_all_takes_two_calls_a_token_and_the_exact_phrase(server, runtime, pg):
    owner = make_user(runtime)
    for name, repo in (("a", "r1"), ("b", "r1"), ("c", "r2")):
        call(server.url, owner.key, "save_session", name=name, summary="s", repo=repo)
    first = call(server.url, owner.key, "delete_all_sessions", repo="r1")["structuredContent"]
    assert (first["deleted"], first["would_delete"]) == (False, 2)
    token = first["confirm_token"]
    wrong_phrase = call(
        server.url, owner.key, "delete_all_sessions", repo="r1", confirm_token=token, confirm_phrase="yes"
    )
    assert wrong_phrase["isError"] and purge.PHRASE in wrong_phrase["content"][0]["text"]
    other_repo = call(
        server.url,
        owner.key,
        "delete_all_sessions",
        repo="r2",
        confirm_token=token,
        confirm_phrase=purge.PHRASE,
    )
    assert other_repo["isError"]  # the token was issued for r1 only
    done = call(
        server.url,
        owner.key,
        "delete_all_sessions",
        repo="r1",
        confirm_token=token,
        confirm_phrase=purge.PHRASE,
    )["structuredContent"]
    assert (done["deleted"], done["sessions_deleted"], done["versions_deleted"]) == (True, 2, 2)
    left = call(server.url, owner.key, "list_sessions")["structuredContent"]["sessions"]
    assert [s["name"] for s in left] == ["c"]
    assert [t for t, _ in audit_classes(pg, owner.id)].count("delete_all_sessions") == 4


def test_a_confirmation_token_expires_and_cannot_be_forged():
    dek, other = b"k" * 32, b"o" * 32
    counted = purge.Counted(datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=UTC), 3)
    token = purge.make_token(dek, "u", "", counted, now=1000)
    # still valid at the edge, and it says what it counted
    assert purge.check_token(dek, "u", "", token, now=1000 + purge.TOKEN_TTL_S) == counted
    for args in (
        (dek, "u", "", token, 1001 + purge.TOKEN_TTL_S),  # late
        (other, "u", "", token, 1000),  # another user's key
        (dek, "v", "", token, 1000),  # another user
        (dek, "u", "r", token, 1000),  # another repo
        (dek, "u", "", token[:-2] + "AA", 1000),  # tampered
        (dek, "u", "", "not-a-token", 1000),
    ):
        try:
            purge.check_token(*args[:4], now=args[4])
        except Exception as exc:
            assert type(exc).__name__ == "ValidationFailed"
        else:
            raise AssertionError(f"accepted {args[1:]}")


def test_a_confirmation_token_deletes_only_what_it_counted_and_only_once(server, runtime):
    owner = make_user(runtime)
    call(server.url, owner.key, "save_session", name="counted", summary="s", repo="github.com/a/r")
    first = call(server.url, owner.key, "delete_all_sessions", repo="github.com/a/r")["structuredContent"]
    assert first["would_delete"] == 1
    for name in ("later-1", "later-2"):  # saved after the count: the token must not take them
        call(server.url, owner.key, "save_session", name=name, summary="s", repo="github.com/a/r")
    confirm = {
        "repo": "github.com/a/r",
        "confirm_token": first["confirm_token"],
        "confirm_phrase": purge.PHRASE,
    }
    done = call(server.url, owner.key, "delete_all_sessions", **confirm)["structuredContent"]
    assert (done["deleted"], done["sessions_deleted"]) == (True, 1)
    replay = call(server.url, owner.key, "delete_all_sessions", **confirm)
    assert replay["isError"] and "the token was used" in replay["content"][0]["text"]
    left = call(server.url, owner.key, "list_sessions")["structuredContent"]["sessions"]
    assert sorted(s["name"] for s in left) == ["later-1", "later-2"]


def test_quotas_stop_a_save_with_a_message_that_says_how_to_free_space(pg):
    rt = open_runtime(make_settings(pg, max_sessions_per_user=2, max_bytes_per_user=50_000))
    try:
        who = make_user(rt)
        with ServerThread(rt) as s:
            for name in ("one", "two"):
                assert not call(s.url, who.key, "save_session", name=name, summary="s")["isError"]
            assert not call(s.url, who.key, "save_session", name="two", summary="a new version")["isError"]
            over = call(s.url, who.key, "save_session", name="three", summary="s")
            assert over["isError"] and "quota" in over["content"][0]["text"]
            assert "delete_session" in over["content"][0]["text"]
            call(s.url, who.key, "delete_session", name="one")
            assert not call(s.url, who.key, "save_session", name="three", summary="s")["isError"]
            big = call(
                s.url, who.key, "save_session", name="three", summary="x" * 4000, plan=["y" * 4000] * 200
            )
            assert big["isError"] and "KiB" in big["content"][0]["text"]
        assert ("save_session", "quota") in audit_classes(pg, who.id)
    finally:
        rt.close()


def test_a_scope_refusal_in_a_workspace_says_the_role_must_allow_it_too(server, runtime):
    """A reader told only to make a delete key would make one her role still refuses (issue 37)."""
    writer = make_user(runtime, scopes=("read", "write"))
    refused = call(server.url, writer.key, "delete_session", name="keep", workspace="team")
    text = refused["content"][0]["text"]
    assert refused["isError"] and "--scope read,write,delete" in text
    assert "in workspace 'team' your role must allow it too, and a reader's does not" in text
    alone = call(server.url, writer.key, "delete_session", name="keep")["content"][0]["text"]
    assert "role" not in alone
