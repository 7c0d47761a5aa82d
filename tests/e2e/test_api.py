"""The HTTP API (`/api/v1`, server/api.py) over real HTTP against the real server: the same keys,
scopes, admission and identical 401 as /mcp; every answer held to docs/openapi.json."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import pytest

from sessionvault.runtime import Runtime, open_runtime
from sessionvault.service import accounts, portability

from ..conftest import ServerThread, admin_db, hook_key, make_settings, make_user
from ..support.jsonrpc import tool_result

OPENAPI = json.loads((Path(__file__).parents[2] / "docs" / "openapi.json").read_text())
REPO = "github.com/acme/widget"


def check(reply: httpx2.Response, path: str, method: str = "get") -> Any:
    """The reply's JSON, validated against the OpenAPI document's schema for its status."""
    operation = OPENAPI["paths"][f"/api/v1{path}"][method]
    spec = operation["responses"].get(str(reply.status_code))
    assert spec is not None, (
        f"{method.upper()} {path} answered {reply.status_code}, not documented: {reply.text}"
    )
    media = next(iter(spec["content"]))
    assert reply.headers["content-type"].startswith(media), reply.headers
    if media == "application/x-ndjson":
        return [json.loads(line) for line in reply.text.splitlines()]
    body = reply.json()
    schema = {**spec["content"][media]["schema"], "components": OPENAPI["components"]}
    jsonschema.validate(body, schema)  # its #/components/... refs resolve in `schema` itself
    return body


def api(
    http: httpx2.Client,
    url: str,
    key: str,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    **kw: Any,
) -> httpx2.Response:
    base = url.removesuffix("/mcp")
    sent = {"Authorization": f"Bearer {key}", **(headers or {})}
    return http.request(method, f"{base}/api/v1{path}", headers=sent, **kw)


def save(url: str, key: str, **args: Any) -> dict[str, Any]:
    tool = "checkpoint_session" if str(args.get("name", "")).startswith("auto/") else "save_session"
    out = tool_result(url, key, tool, **args)
    assert not out["isError"], out
    return out["structuredContent"]


def test_list_get_versions_search_and_delete(server, runtime, http) -> None:
    user = make_user(runtime)
    hooks = hook_key(user)  # a checkpoint is the hooks' to save; the API reads it with the user's key
    save(
        server.url,
        hooks,
        name="auto/codex/s1",
        summary="first",
        repo="git@github.com:Acme/Widget.git",
        client="codex",
    )
    save(server.url, hooks, name="auto/codex/s1", summary="second", repo=REPO, client="codex")
    save(server.url, user.key, name="plan", summary="the plan", repo="github.com/acme/other")

    listed = check(api(http, server.url, user.key, "GET", "/sessions", params={"repo": REPO}), "/sessions")
    assert [s["name"] for s in listed["sessions"]] == ["auto/codex/s1"]
    got = check(
        api(http, server.url, user.key, "GET", "/session", params={"name": "auto/codex/s1"}), "/session"
    )
    assert (got["summary"], got["version"], got["versions"]) == ("second", 2, [2, 1])
    one = check(
        api(http, server.url, user.key, "GET", "/session", params={"name": "auto/codex/s1", "version": 1}),
        "/session",
    )
    assert one["summary"] == "first"
    versions = check(
        api(http, server.url, user.key, "GET", "/session/versions", params={"name": "auto/codex/s1"}),
        "/session/versions",
    )
    assert [(v["version"], v["record"]["summary"]) for v in versions["versions"]] == [
        (1, "first"),
        (2, "second"),
    ]
    # This server has no embedding provider: a search answers by the words alone and says so, and
    # one with no word to match is refused as unavailable (said, not hidden).
    words = check(api(http, server.url, user.key, "GET", "/search", params={"q": "second"}), "/search")
    assert [h["name"] for h in words["results"]] == ["auto/codex/s1"] and "words only" in words["notice"]
    unavailable = api(http, server.url, user.key, "GET", "/search", params={"q": "the"})
    assert unavailable.status_code == 503
    assert check(unavailable, "/search")["error"]["code"] == "provider"
    missing = api(http, server.url, user.key, "GET", "/session", params={"name": "nope"})
    assert missing.status_code == 404 and check(missing, "/session")["error"]["code"]
    writer = make_user(runtime, scopes=("read", "write"))
    refused = api(http, server.url, writer.key, "DELETE", "/session", params={"name": "plan"})
    assert refused.status_code == 403  # a key without delete cannot, as over MCP
    assert "'delete' scope" in check(refused, "/session", "delete")["error"]["message"]
    in_team = api(http, server.url, writer.key, "DELETE", "/session", params={"name": "p", "workspace": "t"})
    said = check(in_team, "/session", "delete")["error"]["message"]
    assert "in workspace 't' your role must allow it too" in said  # a new key alone may not do
    deleted = check(
        api(http, server.url, user.key, "DELETE", "/session", params={"name": "plan"}), "/session", "delete"
    )
    assert deleted == {"deleted": True, "name": "plan", "versions_deleted": 1}
    gone = api(http, server.url, user.key, "DELETE", "/session", params={"name": "plan"})
    assert gone.status_code == 404


def test_search_finds_by_meaning_with_the_local_model(local_server, local_runtime, http) -> None:
    user = make_user(local_runtime)
    save(
        local_server.url, user.key, name="jwt", summary="Moved login to JSON web tokens with refresh rotation"
    )
    save(local_server.url, user.key, name="css", summary="Dark mode colours for the settings page")
    found = check(
        api(http, local_server.url, user.key, "GET", "/search", params={"q": "auth tokens"}), "/search"
    )
    assert found["results"][0]["name"] == "jwt"


def test_handoffs_are_listed_with_their_state(server, runtime, http) -> None:
    user = make_user(runtime)
    save(server.url, user.key, name="h", summary="s", repo=REPO, handoff=True, client="cursor")
    tool_result(server.url, user.key, "load_session", repo=REPO, accept=True, client="codex")
    save(server.url, user.key, name="h2", summary="s", repo=REPO, to_client="gemini")
    listed = check(api(http, server.url, user.key, "GET", "/handoffs", params={"repo": REPO}), "/handoffs")
    states = {(h["name"], h["state"]) for h in listed["handoffs"]}
    assert states == {("h", "accepted"), ("h2", "open")}
    only_open = check(
        api(http, server.url, user.key, "GET", "/handoffs", params={"state": "open"}), "/handoffs"
    )
    assert [h["name"] for h in only_open["handoffs"]] == ["h2"]


def test_export_then_import_into_another_user_is_idempotent(server, runtime, http) -> None:
    source, target = make_user(runtime), make_user(runtime)
    for i in range(3):
        save(server.url, source.key, name="plan", summary=f"v{i}", repo=REPO)
    save(server.url, source.key, name="notes", summary="n", repo=REPO, handoff=True)
    exported = check(api(http, server.url, source.key, "GET", "/export"), "/export")
    assert exported[0] == {"format": portability.FORMAT} and exported[-1] == {"end": True, "sessions": 2}
    body = "\n".join(json.dumps(line) for line in exported).encode()
    headers = {"Content-Type": "application/x-ndjson"}
    first = check(
        api(http, server.url, target.key, "POST", "/import", content=body, headers=headers), "/import", "post"
    )
    assert (first["sessions"], first["versions_added"], first["problems"]) == (2, 4, [])
    again = check(
        api(http, server.url, target.key, "POST", "/import", content=body, headers=headers), "/import", "post"
    )
    assert (again["versions_added"], again["versions_already_there"]) == (0, 4)
    moved = check(
        api(http, server.url, target.key, "GET", "/session/versions", params={"name": "plan"}),
        "/session/versions",
    )
    assert [v["record"]["summary"] for v in moved["versions"]] == ["v0", "v1", "v2"]


def test_an_import_takes_checkpoints_only_with_the_hooks_scope(server, runtime, http) -> None:
    """Issue 35 item 1: POST /import with auto/ names was the other way a read,write key wrote
    (and pruned) checkpoints. Such lines are skipped with a problem that says why; the rest
    lands; a key with the checkpoint scope imports them as checkpoints."""
    source = make_user(runtime)
    save(server.url, source.key, name="plan", summary="p", repo=REPO)
    save(server.url, hook_key(source), name="auto/codex/s1", summary="c", repo=REPO, client="codex")
    exported = check(api(http, server.url, source.key, "GET", "/export"), "/export")
    body = "\n".join(json.dumps(line) for line in exported).encode()
    headers = {"Content-Type": "application/x-ndjson"}
    writer = make_user(runtime, scopes=("read", "write"))
    done = check(
        api(http, server.url, writer.key, "POST", "/import", content=body, headers=headers), "/import", "post"
    )
    assert (done["sessions"], done["versions_added"]) == (1, 1)
    assert len(done["problems"]) == 1 and "checkpoint scope" in done["problems"][0]
    listed = check(api(http, server.url, writer.key, "GET", "/sessions"), "/sessions")
    assert [s["name"] for s in listed["sessions"]] == ["plan"]
    mover = make_user(runtime, scopes=("read", "write", "checkpoint"))
    moved = check(
        api(http, server.url, mover.key, "POST", "/import", content=body, headers=headers), "/import", "post"
    )
    assert (moved["sessions"], moved["versions_added"], moved["problems"]) == (2, 2, [])


def test_an_export_of_a_workspace_not_yours_is_the_404_of_one_that_does_not_exist(
    server, runtime, http
) -> None:
    """Issue 35 item 3: the stream used to start (200) before the workspace was checked, then
    break off. Access is now checked before the first byte."""
    owner, stranger = make_user(runtime), make_user(runtime)
    ws = f"team-{os.urandom(4).hex()}"
    accounts.create_workspace(admin_db(), runtime.keys.provider, ws, owner.id)
    save(server.url, owner.key, name="plan", summary="s", workspace=ws)
    theirs = api(http, server.url, stranger.key, "GET", "/export", params={"workspace": ws})
    nowhere = api(http, server.url, stranger.key, "GET", "/export", params={"workspace": ws + "-x"})
    assert theirs.status_code == nowhere.status_code == 404
    assert theirs.text == nowhere.text.replace(ws + "-x", ws)
    mine = api(http, server.url, owner.key, "GET", "/export", params={"workspace": ws})
    assert mine.status_code == 200 and json.loads(mine.text.splitlines()[1])["name"] == "plan"


def test_an_import_past_the_rate_limit_is_a_429_before_any_work(pg, http) -> None:
    """Issue 35 item 7 over HTTP, at the default limits: 429, Retry-After, how many versions fit
    now and the per-minute limit (what `sessionvault import` paces itself by); nothing saved."""
    rt = open_runtime(make_settings(pg, rate_per_minute=60, rate_per_day=1000), pool_size=2)
    with ServerThread(rt) as server:
        try:
            _an_import_past_the_limit(server, rt, http)
        finally:
            rt.close()


def _an_import_past_the_limit(server: ServerThread, runtime: Runtime, http: httpx2.Client) -> None:
    user = make_user(runtime)
    lines = [{"format": portability.FORMAT}]
    lines += [
        {"name": f"s{i}", "versions": [{"record": {"summary": f"v{v}"}} for v in range(3)]} for i in range(30)
    ]
    body = "\n".join(json.dumps(line) for line in lines).encode()
    headers = {"Content-Type": "application/x-ndjson"}
    reply = api(http, server.url, user.key, "POST", "/import", content=body, headers=headers)
    assert reply.status_code == 429 and 1 <= int(reply.headers["retry-after"]) <= 60, reply.text
    error = reply.json()["error"]
    assert (error["code"], error["fits_now"], error["per_minute"]) == ("rate_limit", 60, 60)
    listed = check(api(http, server.url, user.key, "GET", "/sessions"), "/sessions")
    assert listed["sessions"] == []


@pytest.mark.parametrize("authorization", [None, "Bearer sv_live_" + "x" * 32, "Basic abc"])
def test_every_auth_failure_is_the_mcp_endpoints_identical_401(server, http, authorization) -> None:
    base = server.url.removesuffix("/mcp")
    headers = {"Authorization": authorization} if authorization else {}
    api_reply = http.get(f"{base}/api/v1/sessions", headers=headers)
    mcp_reply = http.post(server.url, headers={**headers, "Content-Type": "application/json"}, content=b"{}")
    assert api_reply.status_code == mcp_reply.status_code == 401
    assert api_reply.content == mcp_reply.content
    assert api_reply.headers["www-authenticate"] == mcp_reply.headers["www-authenticate"]


def test_an_import_needs_write_and_ndjson(server, runtime, http) -> None:
    reader = make_user(runtime, scopes=("read",))
    refused = api(
        http,
        server.url,
        reader.key,
        "POST",
        "/import",
        content=b"{}",
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert refused.status_code == 403
    writer = make_user(runtime)
    wrong_type = api(
        http, server.url, writer.key, "POST", "/import", content=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert wrong_type.status_code == 415
    not_export = api(
        http,
        server.url,
        writer.key,
        "POST",
        "/import",
        content=b"{}",
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert (
        not_export.status_code == 400 and "not a SessionVault export" in not_export.json()["error"]["message"]
    )


def test_an_unknown_path_or_method_is_a_json_error(server, runtime, http) -> None:
    user = make_user(runtime)
    assert api(http, server.url, user.key, "GET", "/nothing").status_code == 404
    wrong = api(http, server.url, user.key, "PUT", "/sessions")
    assert wrong.status_code == 405 and wrong.headers["allow"] == "GET"
