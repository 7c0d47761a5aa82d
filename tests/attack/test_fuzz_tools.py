"""Property-based fuzzing of every tool's arguments through the real ASGI app, in process.

Every call must be answered below 500 with exactly one log line, none of them "internal" (or
"db": the database is up, so bad input must never be reported as a database failure), and the
server must agree with the tool's own pydantic model: arguments the model accepts are served,
arguments it refuses are a validation error. Saves that carry no secret load back unchanged."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from sessionvault.core.checkpoints import is_automatic
from sessionvault.core.repos import canonical_repo
from sessionvault.runtime import Runtime
from sessionvault.server.app import SessionVaultApp
from sessionvault.server.mcp import tools
from sessionvault.server.text_checks import json_problem

from ..support.logs import catch_logs
from .conftest import DERANDOMIZE, GENERATED, OUTCOMES, scaled
from .strategies import CHARS, arguments, envelope, values
from .support import Fuzzer, Outcome, Req, mcp_headers

SPECS = {spec.name: spec for spec in tools.TOOLS}
SCHEMAS = {spec.name: spec.definition().input_schema for spec in tools.TOOLS}  # listed or not
BATCH = 4  # calls per example, sent concurrently
FUZZ = settings(
    deadline=None,
    database=None,
    derandomize=DERANDOMIZE,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@pytest.fixture(scope="module")
def fuzzer(pg, attack_runtime: Runtime, new_user) -> Iterator[tuple[Fuzzer, str]]:
    user = new_user(attack_runtime, ("read", "write", "delete", "checkpoint"))  # every tool callable
    prefix = f"fz-tools-{os.urandom(4).hex()}-"
    with catch_logs() as logs:
        fz = Fuzzer([SessionVaultApp(attack_runtime)], logs, prefix)
        yield fz, user.key
        fz.close()
    OUTCOMES["tool fuzzer"] = fz.outcomes
    # The audit trail agrees with the log: one row per admitted call, none "internal".
    with psycopg.connect(pg.owner_url) as conn:
        rows = dict(
            conn.execute(
                "SELECT request_id, error_class FROM audit_events WHERE request_id LIKE %s", (prefix + "%",)
            ).fetchall()
        )
    assert "internal" not in rows.values()
    missing = [rid for rid in fz.logged if rid not in rows]
    assert not missing, f"{len(missing)} admitted calls have no audit row, e.g. {missing[:3]}"
    wrong = {
        rid: (rows[rid], line.get("error_class"))
        for rid, line in fz.logged.items()
        if rows[rid] != line.get("error_class")
    }
    assert not wrong, f"audit and log disagree on the error class: {list(wrong.items())[:5]}"


def accepted(name: str, args: Any) -> bool:
    """What the tool's own model says of these arguments."""
    try:
        parsed = SPECS[name].args.model_validate(args if args is not None else {})
    except ValidationError:
        return False
    if getattr(parsed, "workspace", ""):  # the fuzzing user belongs to no workspace
        return False
    if name == "save_session":  # auto/ names: the checkpoint path's alone
        return not is_automatic(parsed.name)
    if name == "checkpoint_session":  # personal, never offered, named auto/<its client>/<id>
        client, slash, _ = parsed.name.removeprefix("auto/").partition("/")
        offered = parsed.handoff or parsed.to_client or parsed.to_person
        return is_automatic(parsed.name) and bool(slash) and client == parsed.client != "" and not offered
    return True


def call(name: Any, args: Any, key: str, modern: bool) -> Req:
    body, extra = envelope("tools/call", {"name": name, "arguments": args}, modern=modern)
    headers = [h for h in mcp_headers(key, body) if h[0] != b"mcp-protocol-version"] + extra
    return Req(body, headers)


TOOL_CALLS = st.one_of(
    [st.tuples(st.just(name), arguments(SCHEMAS[name]), st.booleans()) for name in sorted(SPECS)]
)


def judge(o: Outcome, name: str, args: Any) -> None:
    """The server's verdict must match the model's."""
    reply = o.reply.json()
    if "error" in reply:  # the SDK refused the call itself (arguments not an object), or the edge
        # did: a NUL in them is text the database cannot hold (server/text_checks.py)
        assert not isinstance(args, dict) or json_problem(args) is not None, (name, args, reply)
        assert o.reply.status in (200, 400), (name, args, o.reply.status, reply)
        return
    assert o.reply.status == 200, (name, args, o.reply.status, o.reply.body[:300])
    result = reply["result"]
    text = result["content"][0]["text"] if result.get("content") else ""
    if not accepted(name, args):
        assert result["isError"] is True, (name, args, text)
        assert o.log is not None and o.log.get("error_class") == "validation", (name, args, o.log, text)
        return
    semantic = (name == "list_sessions" and bool((args or {}).get("cursor"))) or name == "delete_all_sessions"
    if result["isError"] and name == "checkpoint_session":  # many clients: their quota may fill
        assert o.log is not None and o.log.get("error_class") == "quota", (name, args, o.log, text)
        return
    if result["isError"]:  # a valid call may fail only on what the schema cannot see
        assert semantic, (name, args, text, o.log)
        assert o.log is not None and o.log.get("error_class") == "validation", (name, args, o.log, text)


def test_every_tool_with_fuzzed_arguments(fuzzer: tuple[Fuzzer, str]) -> None:
    fz, key = fuzzer
    before = fz.sent
    examples = scaled(800)

    @settings(FUZZ, max_examples=examples)
    @given(st.lists(TOOL_CALLS, min_size=BATCH, max_size=BATCH))
    def run(batch: list[tuple[str, Any, bool]]) -> None:
        outcomes = fz.send([call(name, args, key, modern) for name, args, modern in batch])
        for (name, args, _), outcome in zip(batch, outcomes, strict=True):
            judge(outcome, name, args)

    run()
    GENERATED["tool arguments"] = fz.sent - before
    assert fz.sent - before >= examples * BATCH


ODD_TOOL_NAMES = st.one_of(
    st.text(CHARS, max_size=30),
    st.sampled_from(["", "SAVE_SESSION", "save_session ", "tools/call", "__proto__"]),
)


def test_unknown_tools_and_odd_names(fuzzer: tuple[Fuzzer, str]) -> None:
    fz, key = fuzzer
    before = fz.sent

    @settings(FUZZ, max_examples=scaled(120))
    @given(
        st.lists(
            st.tuples(st.one_of(ODD_TOOL_NAMES, values({})), values({}), st.booleans()),
            min_size=BATCH,
            max_size=BATCH,
        )
    )
    def run(batch: list[tuple[Any, Any, bool]]) -> None:
        outcomes = fz.send([call(name, args, key, modern) for name, args, modern in batch])
        for (name, _, _), o in zip(batch, outcomes, strict=True):
            if isinstance(name, str) and name in SPECS:
                continue
            assert o.log is not None and o.log.get("error_class") == "validation", (name, o.log)

    run()
    GENERATED["unknown tools"] = fz.sent - before


SAVE_ARGS = values(SCHEMAS["save_session"]).filter(lambda a: accepted("save_session", a))


def test_what_is_saved_loads_back_unchanged(fuzzer: tuple[Fuzzer, str]) -> None:
    """Any valid record, with any Unicode in it, round-trips exactly (unless redaction took a
    secret out of it: then the save says so, and the stored name is the one it answers)."""
    fz, key = fuzzer
    before = fz.sent
    counter = iter(range(10**9))

    @settings(FUZZ, max_examples=scaled(40))
    @given(st.lists(SAVE_ARGS, min_size=BATCH, max_size=BATCH))
    def run(batch: list[dict[str, Any]]) -> None:
        batch = [{**args, "name": f"rt-{next(counter)}-{args['name']}"[:200]} for args in batch]
        saves = fz.send([call("save_session", args, key, modern=False) for args in batch])
        stored = [o.reply.tool_result() for o in saves]
        for args, result in zip(batch, stored, strict=True):
            assert not result["isError"], (args, result)
        names = [result["structuredContent"]["name"] for result in stored]
        loads = fz.send([call("load_session", {"name": name}, key, modern=False) for name in names])
        for args, result, loaded in zip(batch, stored, loads, strict=True):
            saved = result["structuredContent"]
            record = loaded.reply.tool_result()["structuredContent"]
            assert record["found"] is True and record["version"] == saved["version"] == 1, (saved, record)
            if saved.get("redacted"):
                continue
            expected = {
                "name": args["name"],
                "repo": canonical_repo(args.get("repo", "")),  # one repo identity (core.repos)
                "client": args.get("client", ""),
                "summary": args["summary"],
                **{f: args.get(f, []) for f in ("plan", "decisions", "todos", "files", "errors", "tried")},
            }
            assert {k: record[k] for k in expected} == json.loads(json.dumps(expected))

    run()
    GENERATED["save/load round trip"] = fz.sent - before


def test_a_saved_name_is_always_one_the_tools_accept(fuzzer: tuple[Fuzzer, str]) -> None:
    """Found by this tier: redaction lengthened a 200-character name past the cap (an AWS key
    of 20 characters becomes a 25-character marker), and the session was saved under a name
    that load_session and delete_session refused as too long."""
    fz, key = fuzzer
    asked = "x" * 180 + "AKIAZ7Q4WJ2PLK5RTX3M"  # 200 characters: valid (not AWS's documented example key)
    (saved,) = fz.send([call("save_session", {"name": asked, "summary": "s"}, key, modern=False)])
    stored = saved.reply.tool_result()["structuredContent"]["name"]
    assert stored != asked  # the key was taken out of the name
    # One after the other: sent in one batch they race, and a delete that wins finds the load nothing.
    (loaded,) = fz.send([call("load_session", {"name": stored}, key, modern=False)])
    (deleted,) = fz.send([call("delete_session", {"name": stored}, key, modern=False)])
    assert loaded.reply.tool_result()["structuredContent"].get("found") is True, loaded.reply.body[:300]
    assert deleted.reply.tool_result()["structuredContent"].get("deleted") is True, deleted.reply.body[:300]
