"""Randomized tenant isolation, checked against a model.

Several users (one of them with a read-only key) run random sequences of every tool through
the real HTTP server (uvicorn on a loopback port). A plain model of what each user saved,
versioned and deleted is the oracle for every answer. After every step, raw SQL as the serving
role shows that a tenant set with set_config('app.user_id', ...) sees exactly that tenant's
rows of every tenant table, and no tenant set sees none of them (audit rows with no user
excepted, as the audit policy allows)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import psycopg
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from sessionvault.core.records import embedding_text
from sessionvault.runtime import Runtime, open_runtime
from sessionvault.server.mcp import tools

from ..conftest import ServerThread, User, proof_for
from .conftest import DERANDOMIZE, GENERATED, attack_settings, scaled
from .support import PROTOCOL_VERSION

HISTORY_KEEP = 2  # versions kept besides the head: small, so the model sees pruning
NAMES = ["plan", "Plan", "notes", "\u03b1", "shared"]  # shared by every user on purpose
REPOS = ["", "github.com/acme/app", "github.com/acme/api"]
WORDS = st.text("abcdefghij ", min_size=1, max_size=30).map(lambda s: s.strip() or "x")
HAS_DELETE_ALL = "delete_all_sessions" in tools.TOOL_NAMES
TENANT_TABLES = ("sessions", "session_versions", "rate_counters", "user_usage")


@pytest.fixture(scope="module")
def iso_runtime(pg, fake_embeddings) -> Iterator[Runtime]:
    rt = open_runtime(attack_settings(pg, fake_embeddings.base_url, history_keep=HISTORY_KEEP))
    yield rt
    rt.close()


@pytest.fixture(scope="module")
def iso_server(iso_runtime: Runtime) -> Iterator[ServerThread]:
    with ServerThread(iso_runtime) as server:
        yield server


@dataclass
class Saved:
    repo: str
    versions: dict[int, str] = field(default_factory=dict)  # version -> summary
    head: int = 0
    order: int = 0  # when it was last saved: list and latest-for-repo go newest first


@dataclass
class Tenant:
    user: User
    writer: bool
    sessions: dict[str, Saved] = field(default_factory=dict)
    calls: int = 0  # tools/call requests admitted: one audit row and one rate-counter hit each


class Http:
    def __init__(self, url: str) -> None:
        self.url = url
        self.client = httpx2.Client(timeout=30)
        self.ids = itertools.count(1)

    def call(self, tenant: Tenant, tool: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any], str]:
        """(is_error, structured content, text) of one tools/call as `tenant`."""
        body = {
            "jsonrpc": "2.0",
            "id": next(self.ids),
            "method": "tools/call",
            "params": {"name": tool, "arguments": args},
        }
        reply = self.client.post(
            self.url,
            content=json.dumps(body),
            headers={
                "Authorization": f"Bearer {tenant.user.key}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": PROTOCOL_VERSION,
            },
        )
        tenant.calls += 1
        assert reply.status_code == 200, (tool, args, reply.status_code, reply.text[:300])
        result = reply.json()["result"]
        text = result["content"][0]["text"] if result.get("content") else ""
        return bool(result.get("isError")), result.get("structuredContent") or {}, text


@dataclass
class Sql:
    owner: psycopg.Connection[Any]  # superuser: sees through RLS, for comparison
    app: psycopg.Connection[Any]  # the serving role: each tenant set, then cleared
    untouched: psycopg.Connection[Any]  # the serving role, never a tenant set

    @classmethod
    def open(cls, pg: Any) -> Sql:
        return cls(*(psycopg.connect(url, autocommit=True) for url in (pg.owner_url, pg.app_url, pg.app_url)))

    def close(self) -> None:
        for conn in (self.owner, self.app, self.untouched):
            conn.close()


def _owners(table: str) -> str:
    return f"(SELECT coalesce(array_agg(DISTINCT user_id::text), '{{}}') FROM {table})"


def check_tables(sql: Sql, tenants: list[Tenant]) -> None:
    """Raw SQL as the serving role, against the model and the owner's view (one round trip
    per tenant for what it sees)."""
    owner, app, untouched = sql.owner, sql.app, sql.untouched
    usage_table = app.execute("SELECT to_regclass('user_usage') IS NOT NULL").fetchone()[0]
    tables = [t for t in TENANT_TABLES if usage_table or t != "user_usage"]
    audit = dict(
        owner.execute(
            "SELECT user_id::text, array_agg(id) FROM audit_events"
            " WHERE user_id = ANY(%s::uuid[]) GROUP BY 1",
            ([t.user.id for t in tenants],),
        ).fetchall()
    )
    seen_as_tenant = f"""
        SELECT (SELECT coalesce(json_object_agg(name, version), '{{}}') FROM sessions),
               (SELECT coalesce(array_agg(s.name || '#' || v.version), '{{}}')
                FROM session_versions v JOIN sessions s ON s.id = v.session_id),
               (SELECT count(*) FROM session_versions v
                WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = v.session_id)),
               (SELECT coalesce(sum(hits), 0) FROM rate_counters WHERE budget = 'tool' AND span = 'day'),
               -- the serving role may read only the id column of audit rows, of its tenant's
               (SELECT coalesce(array_agg(id), '{{}}') FROM audit_events),
               {", ".join(_owners(t) for t in tables)}
    """
    (stored,) = owner.execute(
        "SELECT count(*) FROM sessions WHERE user_id = ANY(%s::uuid[])", ([t.user.id for t in tenants],)
    ).fetchone()
    assert stored == sum(len(t.sessions) for t in tenants)  # what the checks below must find
    for tenant in tenants:
        uid = tenant.user.id
        app.execute("SELECT set_config('app.user_id', %s, false)", (_proof(uid),))  # the database's proof
        heads, versions, orphans, hits, audited, *owners = app.execute(seen_as_tenant).fetchone()
        for table, found in zip(tables, owners, strict=True):
            assert set(found) <= {uid}, (table, uid, found)
        assert heads == {n: s.head for n, s in tenant.sessions.items()}, (uid, heads)
        expected = {f"{n}#{v}" for n, s in tenant.sessions.items() for v in s.versions}
        assert set(versions) == expected, (uid, versions, expected)
        assert orphans == 0
        assert hits == tenant.calls, (uid, hits, tenant.calls)
        assert sorted(audited) == sorted(audit.get(uid, [])), uid
        assert len(audited) == tenant.calls, (uid, len(audited), tenant.calls)
    app.execute("SELECT set_config('app.user_id', '', false)")  # a tenant set, then cleared
    (nulls,) = owner.execute("SELECT count(*) FROM audit_events WHERE user_id IS NULL").fetchone()
    counts = ", ".join(f"(SELECT count(*) FROM {t})" for t in (*tables, "audit_events"))
    for conn in (app, untouched):  # and a connection that never set one
        *rows, audit_rows = conn.execute(f"SELECT {counts}").fetchone()
        assert rows == [0] * len(tables), dict(zip(tables, rows, strict=True))
        assert audit_rows == nulls  # audit rows with no user: the only ones visible untenanted


_PROOFS: dict[str, tuple[float, str]] = {}


def _proof(user_id: str) -> str:
    """A proof of `user_id` for the check (minted as the owner), reused for 30 s of its 60."""
    made, proof = _PROOFS.get(user_id, (0.0, ""))
    if time.monotonic() - made > 30:
        made, proof = time.monotonic(), proof_for(user_id)
        _PROOFS[user_id] = (made, proof)
    return proof


class Isolation(RuleBasedStateMachine):
    sql: Sql
    runtime: Runtime
    http: Http
    new_user: Any
    steps = 0

    @initialize()
    def users(self) -> None:
        self.clock = itertools.count(1)
        self.tenants = [Tenant(self.new_user(self.runtime), True) for _ in range(4)]
        self.tenants.append(Tenant(self.new_user(self.runtime, ("read",)), False))

    def pick(self, data: st.DataObject) -> Tenant:
        return data.draw(st.sampled_from(self.tenants), label="tenant")

    @rule(data=st.data(), name=st.sampled_from(NAMES), repo=st.sampled_from(REPOS), summary=WORDS)
    def save(self, data: st.DataObject, name: str, repo: str, summary: str) -> None:
        t = self.pick(data)
        error, out, text = self.http.call(t, "save_session", {"name": name, "repo": repo, "summary": summary})
        if not t.writer:
            assert error and "scope" in text, text
            return
        assert not error, text
        s = t.sessions.get(name)
        if s is not None and (s.repo, s.versions.get(s.head)) == (repo, summary):
            # The head already holds this content: no version, and it keeps its place in lists.
            assert (out["version"], out.get("unchanged")) == (s.head, True), out
            return
        s = t.sessions.setdefault(name, Saved(repo))
        s.head += 1
        s.repo, s.order = repo, next(self.clock)
        s.versions[s.head] = summary
        s.versions = {v: x for v, x in s.versions.items() if v >= s.head - HISTORY_KEEP}
        assert (out["name"], out["version"], out["embedded"]) == (name, s.head, True), out

    @rule(data=st.data(), name=st.sampled_from(NAMES), version=st.integers(0, 4))
    def load_by_name(self, data: st.DataObject, name: str, version: int) -> None:
        t = self.pick(data)
        args = {"name": name, "version": version} if version else {"name": name}
        error, out, text = self.http.call(t, "load_session", args)
        assert not error, text
        s = t.sessions.get(name)
        wanted = s.head if s and not version else version
        if s is None or wanted not in s.versions:
            assert out["found"] is False, (name, version, out)
            return
        assert out["found"] is True and out["name"] == name, out
        assert (out["version"], out["summary"], out["repo"]) == (wanted, s.versions[wanted], s.repo), out
        assert out["versions"] == sorted(s.versions, reverse=True), out

    @rule(data=st.data(), repo=st.sampled_from(REPOS))
    def load_latest(self, data: st.DataObject, repo: str) -> None:
        t = self.pick(data)
        error, out, text = self.http.call(t, "load_session", {"repo": repo, "mode": "brief"})
        assert not error, text
        mine = [(s.order, n) for n, s in t.sessions.items() if not repo or s.repo == repo]
        if not mine:
            assert out["found"] is False, out
            return
        name = max(mine)[1]
        assert (out["name"], out["summary"]) == (name, t.sessions[name].versions[t.sessions[name].head]), out

    @rule(data=st.data(), repo=st.sampled_from(REPOS), limit=st.sampled_from([1, 2, 100]))
    def list_every_page(self, data: st.DataObject, repo: str, limit: int) -> None:
        t = self.pick(data)
        names, cursor = [], ""
        for _ in range(20):
            args = {"repo": repo, "limit": limit, **({"cursor": cursor} if cursor else {})}
            error, out, text = self.http.call(t, "list_sessions", args)
            assert not error, text
            names += [row["name"] for row in out["sessions"]]
            cursor = out["next_cursor"]
            if not cursor:
                break
        expected = [
            n
            for _, n in sorted(
                ((s.order, n) for n, s in t.sessions.items() if not repo or s.repo == repo), reverse=True
            )
        ]
        assert names == expected, (names, expected)

    @rule(data=st.data(), repo=st.sampled_from(REPOS), limit=st.integers(1, 6))
    def search(self, data: st.DataObject, repo: str, limit: int) -> None:
        t = self.pick(data)
        mine = {n: s for n, s in t.sessions.items() if not repo or s.repo == repo}
        if mine and data.draw(st.booleans(), label="exact"):
            name = data.draw(st.sampled_from(sorted(mine)), label="target")
            s = mine[name]
            query = embedding_text({"name": name, "repo": s.repo, "summary": s.versions[s.head]})
        else:
            name, query = None, data.draw(WORDS, label="query")
        error, out, text = self.http.call(
            t, "search_sessions", {"query": query, "repo": repo, "max_results": limit}
        )
        assert not error, text
        hits = out["results"]  # the relevance floor may keep fewer (service/answers.relevant)
        assert len(hits) <= min(limit, len(mine)), (len(hits), limit, len(mine))
        assert name is None or hits, (name, out)
        for hit in hits:  # only this tenant's sessions, each as its head
            s = mine.get(hit["name"])
            assert s is not None, (hit, sorted(mine))
            assert (hit["version"], hit["summary"]) == (s.head, s.versions[s.head]), hit
        if name is not None:
            assert hits[0]["name"] == name and hits[0]["score"] > 0.999, (name, hits[:2])

    @rule(data=st.data(), name=st.sampled_from(NAMES))
    def delete(self, data: st.DataObject, name: str) -> None:
        t = self.pick(data)
        error, out, text = self.http.call(t, "delete_session", {"name": name})
        if not t.writer:
            assert error and "scope" in text, text
            return
        assert not error, text
        s = t.sessions.pop(name, None)
        assert out["deleted"] is (s is not None), (name, out)
        if s is not None:
            assert out["versions_deleted"] == len(s.versions), (out, s)

    @rule(data=st.data(), repo=st.sampled_from(REPOS), steal=st.booleans())
    def delete_all(self, data: st.DataObject, repo: str, steal: bool) -> None:
        """Two steps; with `steal`, the token comes from another user and must not work."""
        if not HAS_DELETE_ALL:
            return
        t = self.pick(data)
        issuer = (
            data.draw(st.sampled_from([x for x in self.tenants if x is not t]), label="issuer")
            if steal
            else t
        )
        error, first, text = self.http.call(issuer, "delete_all_sessions", {"repo": repo})
        if not issuer.writer:
            assert error and "scope" in text, text
            return
        assert not error, text
        doomed = [n for n, s in issuer.sessions.items() if not repo or s.repo == repo]
        assert (first["deleted"], first["would_delete"]) == (False, len(doomed)), first
        args = {
            "repo": repo,
            "confirm_token": first["confirm_token"],
            "confirm_phrase": "I CONFIRM DELETE ALL",
        }
        error, out, text = self.http.call(t, "delete_all_sessions", args)
        if not t.writer:
            assert error and "scope" in text, text
            return
        if steal:
            assert error and "confirm_token" in text, (text, out)
            return
        assert not error, text
        versions = sum(len(t.sessions[n].versions) for n in doomed)
        assert (out["sessions_deleted"], out["versions_deleted"]) == (len(doomed), versions), out
        for n in doomed:
            del t.sessions[n]

    @invariant()
    def only_own_rows(self) -> None:
        if hasattr(self, "tenants"):
            Isolation.steps += 1
            check_tables(self.sql, self.tenants)


def test_tenants_see_only_their_own_rows(pg, iso_runtime, iso_server, new_user) -> None:
    Isolation.sql, Isolation.runtime, Isolation.new_user = Sql.open(pg), iso_runtime, staticmethod(new_user)
    Isolation.http = Http(iso_server.url)
    Isolation.steps = 0
    run_state_machine_as_test(
        Isolation,
        settings=settings(
            max_examples=scaled(15),
            stateful_step_count=30,
            deadline=None,
            database=None,
            derandomize=DERANDOMIZE,
            print_blob=True,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
    Isolation.http.client.close()
    Isolation.sql.close()
    GENERATED["isolation model (HTTP calls)"] = next(Isolation.http.ids) - 1
    assert Isolation.steps >= scaled(15) * 5
