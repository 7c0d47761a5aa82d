"""The tables that grow with traffic, partitioned by time (migration 0017, db/partitions.py).

The conversion is checked on both servers it meets: the embedded PostgreSQL 18 (its owner a
superuser) and a password-protected PostgreSQL 16 whose owner is no superuser, only
CREATEROLE (Neon's and RDS's shape: row security binds that owner, so a copy that forgot it
would see no tenant's rows). Rows are seeded through the migration before it, the migration
runs, and every row must come out as it went in, ids included, under the same grants and
policies. The prune runs as the maintenance role: it owns nothing, yet drops whole partitions."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from sessionvault.db import partitions
from sessionvault.db.migrations import migrate, migration_files, migrations_dir, version_of
from sessionvault.db.pool import Database

from ..support.fresh import Fresh, fresh_embedded

TABLES = ("audit_events", "workspace_access", "rate_counters", "auth_failures")
ORDER = {"audit_events": "id", "workspace_access": "id", "rate_counters": "user_id, budget, span, slot",
         "auth_failures": "slot, reason"}  # fmt: skip


def _before_partitions() -> str:
    versions = [version_of(f) for f in migration_files(migrations_dir())]
    return versions[versions.index(_partitioning()) - 1]


def _partitioning() -> str:
    """The partitioning migration itself (later ones may change policies: 0020's InitPlans)."""
    versions = [version_of(f) for f in migration_files(migrations_dir())]
    return next(v for v in versions if v.endswith("_partitions"))


_USER = "INSERT INTO users (name, dek_wrapped, key_id, kind) VALUES (%s, '\\x00', 'k', %s) RETURNING id"


def _user(conn: psycopg.Connection, name: str, kind: str = "person") -> Any:
    return conn.execute(_USER, (name, kind)).fetchone()[0]  # type: ignore[index]


def _seed(conn: psycopg.Connection) -> None:
    """Rows of every kind the tables hold, spread over the last five weeks (and one two years
    ago, older than any partition the migration makes): three people, a workspace, no-user rows."""
    people = [_user(conn, f"p{n}") for n in range(3)]
    space = _user(conn, "w", "workspace")
    conn.execute(
        "INSERT INTO audit_events (user_id, at, tool, outcome, error_class, latency_ms)"
        " SELECT NULL::uuid, now() - g * interval '3 days', 'admin:create_user', 'error', 'auth', 1"
        " FROM generate_series(0, 5) g"
        " UNION ALL SELECT NULL, now() - interval '2 years', 'old', 'ok', NULL, 1"
    )
    for n, who in enumerate(people):
        conn.execute(
            "INSERT INTO audit_events (user_id, at, request_id, tool, outcome, error_class, latency_ms,"
            " ip_hash, key_prefix, oauth_client_id)"
            " SELECT %s, now() - g * interval '7 hours', 'r' || g, 'load_session',"
            " CASE WHEN g %% 5 = 0 THEN 'error' ELSE 'ok' END, CASE WHEN g %% 5 = 0 THEN 'db' END,"
            " CASE WHEN g %% 5 = 0 THEN g END, '\\xab', 'sv_k', NULL FROM generate_series(0, 120) g",
            (who,),
        )
        conn.execute(
            "INSERT INTO rate_counters (user_id, budget, span, slot, hits)"
            " SELECT %s, 'tool', s, now() - g * interval '5 hours' - %s * interval '1 second', g + 1"
            " FROM generate_series(0, 20) g, unnest(ARRAY['minute', 'day']) s",
            (who, n),
        )
        conn.execute(
            "INSERT INTO workspace_access (workspace_id, user_id, access, tool, at)"
            " SELECT %s, %s, 'read', 'load_session', now() - g * interval '13 hours'"
            " FROM generate_series(0, 30) g",
            (space, who),
        )
    conn.execute(
        "INSERT INTO auth_failures (slot, reason, hits)"
        " SELECT date_trunc('minute', now() - g * interval '9 days'), r, g + 1"
        " FROM generate_series(0, 10) g, unnest(ARRAY['unknown_key', 'revoked_key']) r"
    )
    # The newest ids deleted: the sequence is ahead of the largest id left, and must stay ahead.
    conn.execute("DELETE FROM audit_events WHERE id > (SELECT max(id) - 3 FROM audit_events)")


def _rows(conn: psycopg.Connection) -> dict[str, list[tuple[Any, ...]]]:
    return {t: conn.execute(f"SELECT * FROM {t} ORDER BY {ORDER[t]}").fetchall() for t in TABLES}


_CATALOG = {
    "grants": """
        SELECT c.relname, NULL, g.grantee::regrole::text, g.privilege_type, g.is_grantable
        FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) g WHERE c.relname = ANY (%(t)s)
        UNION ALL
        SELECT c.relname, a.attname, g.grantee::regrole::text, g.privilege_type, g.is_grantable
        FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
        CROSS JOIN LATERAL aclexplode(a.attacl) g WHERE c.relname = ANY (%(t)s) ORDER BY 1, 2, 3, 4""",
    "policies": """
        SELECT tablename, policyname, permissive, roles::text, cmd, qual, with_check
        FROM pg_policies WHERE tablename = ANY (%(t)s) ORDER BY 1, 2""",
    "row security": """
        SELECT relname, relrowsecurity, relforcerowsecurity, pg_get_userbyid(relowner)
        FROM pg_class WHERE relname = ANY (%(t)s) AND relnamespace = 'public'::regnamespace ORDER BY 1""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
        WHERE conrelid::regclass::text = ANY (%(t)s) AND contype IN ('c', 'f') ORDER BY 1, 2""",
    "columns": """
        SELECT table_name, column_name, data_type, is_nullable, column_default, is_identity
        FROM information_schema.columns WHERE table_name = ANY (%(t)s) ORDER BY 1, ordinal_position""",
}


def _catalog(conn: psycopg.Connection) -> dict[str, list[tuple[Any, ...]]]:
    return {what: conn.execute(query, {"t": list(TABLES)}).fetchall() for what, query in _CATALOG.items()}


def test_the_conversion_keeps_every_row_id_grant_and_policy(fresh: Fresh) -> None:
    migrate(fresh.owner, through=_before_partitions())
    with psycopg.connect(fresh.superuser) as conn:
        _seed(conn)
    with psycopg.connect(fresh.superuser) as conn:
        rows, catalog = _rows(conn), _catalog(conn)
        (last_id,) = conn.execute("SELECT last_value FROM audit_events_id_seq").fetchone()  # type: ignore[misc]
    assert {t: len(r) for t, r in rows.items()} == {
        "audit_events": 3 * 121 + 7 - 3, "workspace_access": 93, "rate_counters": 126, "auth_failures": 22,
    }  # fmt: skip

    migrate(fresh.owner, through=_partitioning())

    with psycopg.connect(fresh.superuser) as conn:
        assert _rows(conn) == rows
        assert _catalog(conn) == catalog
        kinds = conn.execute(
            "SELECT relname, relkind FROM pg_class WHERE relname = ANY (%s) ORDER BY 1", (list(TABLES),)
        ).fetchall()
        assert kinds == sorted((t, "p") for t in TABLES)
        # Only what is older than any partition the migration made waits in the default one.
        stray = conn.execute(
            "SELECT tableoid::regclass::text, tool FROM audit_events"
            " WHERE tableoid = 'audit_events_default'::regclass"
        ).fetchall()
        assert stray == [("audit_events_default", "old")]
        for table in ("workspace_access", "rate_counters", "auth_failures"):
            assert conn.execute(f"SELECT count(*) FROM {table}_default").fetchone() == (0,)
        # A partition for each past day (month) that held rows, none for the empty ones.
        for table in TABLES:
            past = [p for p in _partitions(conn, table) if p[-8:].isdigit() and p[-8:] < _day(0)[:8]]
            for name in past:
                assert conn.execute(f"SELECT count(*) > 0 FROM {name}").fetchone() == (True,), name
        # The identity continues after the old sequence, not after the largest id left.
        conn.execute("SELECT set_config('app.user_id', (SELECT id::text FROM users WHERE name = 'p0'), true)")
        (new_id,) = conn.execute(
            "INSERT INTO audit_events (user_id, tool, outcome)"
            " VALUES (app_current_user_id(), 't', 'ok') RETURNING id"
        ).fetchone()  # type: ignore[misc]
        assert new_id == last_id + 1
        assert max(r[0] for r in rows["audit_events"]) < last_id


def test_the_serving_role_writes_and_reads_through_the_partitioned_tables(fresh: Fresh) -> None:
    """The admission's statements, as the serving role and under row security: the rows land in
    today's partitions, and another tenant sees none of them."""
    migrate(fresh.owner)
    with psycopg.connect(fresh.superuser, autocommit=True) as conn:
        conn.execute("ALTER ROLE sessionvault_app LOGIN")
        who, other = (str(_user(conn, f"u{secrets.token_hex(3)}")) for _ in range(2))
    app = _app_url(fresh)
    with psycopg.connect(fresh.superuser) as conn:  # the database's proofs (0020), as an admission mints them
        proofs = {
            u: str(conn.execute("SELECT sessionvault_mint_proof(%s)", (u,)).fetchone()[0])
            for u in (who, other)
        }  # type: ignore[index]
    with psycopg.connect(app) as conn:
        conn.execute("SELECT set_config('app.user_id', %s, true)", (proofs[who],))
        conn.execute(
            "INSERT INTO rate_counters AS c (user_id, budget, span, slot, hits)"
            " VALUES (%s, 'tool', 'minute', date_bin('5 seconds', now(), timestamptz 'epoch'), 1)"
            " ON CONFLICT ON CONSTRAINT rate_counters_pkey DO UPDATE SET hits = c.hits + 1",
            (who,),
        )
        (audit_id,) = conn.execute(
            "INSERT INTO audit_events (user_id, tool, outcome) VALUES (%s, 'load', 'ok') RETURNING id",
            (who,),
        ).fetchone()  # type: ignore[misc]
        conn.execute(
            "UPDATE audit_events SET outcome = 'error', error_class = 'db'"
            " WHERE id = %s AND at > now() - interval '1 day'",
            (audit_id,),
        )
        conn.execute(
            "INSERT INTO auth_failures (slot, reason, hits) VALUES (date_trunc('minute', now()), 'x', 1)"
        )
    today = datetime.now(UTC).strftime("%Y%m%d")
    with psycopg.connect(fresh.superuser) as conn:
        placed = conn.execute(
            "SELECT tableoid::regclass::text, outcome FROM audit_events WHERE id = %s", (audit_id,)
        ).fetchone()
        assert placed == (f"audit_events_p{today}", "error")
        counter = conn.execute("SELECT tableoid::regclass::text FROM rate_counters WHERE user_id = %s", [who])
        assert counter.fetchall() == [(f"rate_counters_p{today}",)]
    with psycopg.connect(app) as conn:
        conn.execute("SELECT set_config('app.user_id', %s, true)", (proofs[other],))
        assert conn.execute("SELECT count(*) FROM audit_events").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM rate_counters").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"SELECT * FROM audit_events_p{today}")  # a partition is the owner's alone


def _app_url(fresh: Fresh) -> str:
    return _role_url(fresh, "sessionvault_app")


def _role_url(fresh: Fresh, role: str) -> str:
    """The role on the fresh database: over the embedded server's socket (trust), or on the
    password-protected cluster with a password set here."""
    info = conninfo_to_dict(fresh.owner)
    if info.get("password"):
        password = secrets.token_urlsafe(12)
        with psycopg.connect(fresh.superuser, autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(password))
            )
        return make_conninfo(fresh.owner, user=role, password=password)
    return make_conninfo(fresh.owner, user=role, password="")


def _partitions(conn: psycopg.Connection, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        " WHERE i.inhparent = %s::regclass ORDER BY 1",
        (table,),
    ).fetchall()
    return [r[0] for r in rows]


def _day(days_ago: int) -> str:
    return (datetime.now(UTC) - timedelta(days=days_ago)).strftime("%Y%m%d")


def test_the_prune_drops_whole_partitions_and_keeps_recent_rows(pg: Any) -> None:
    fresh = fresh_embedded(pg)
    migrate(fresh.owner, through=_before_partitions())
    with psycopg.connect(fresh.superuser) as conn:
        uid = _user(conn, "p")
        conn.execute(
            "INSERT INTO audit_events (user_id, at, tool, outcome)"
            " SELECT %s, now() - g * interval '1 day', 't' || g, 'ok' FROM generate_series(0, 40) g",
            (uid,),
        )
    migrate(fresh.owner)
    with psycopg.connect(fresh.superuser) as conn:
        assert f"audit_events_p{_day(40)}" in _partitions(conn, "audit_events")
        # Strays in the default partition: one long expired, one far ahead of any partition.
        conn.execute(
            "INSERT INTO audit_events (user_id, at, tool, outcome) VALUES"
            " (%s, now() - interval '600 days', 'expired stray', 'ok'),"
            " (%s, now() + interval '10 days', 'early', 'ok')",
            (uid, uid),
        )

    maint = Database(_role_url(fresh, "sessionvault_maint"), max_size=1)
    try:
        pruned = partitions.prune(maint, "audit_events", timedelta(days=30), ahead=timedelta(days=14))
        assert pruned.deleted == 1  # the expired stray, the only row deleted one by one
        assert pruned.busy == 0
        assert pruned.detached == 10  # days 31..40 wholly past the retention; day 30 is not yet
        assert pruned.detached_rows == pruned.detached  # one row a day, as the migration's ANALYZE counted
        assert pruned.created >= 7  # through two weeks ahead, the early row's day among them
        assert partitions.drop_detached(maint) == pruned.detached
        assert partitions.drop_detached(maint) == 0
        again = partitions.prune(maint, "audit_events", timedelta(days=30), ahead=timedelta(days=14))
        assert (again.created, again.detached, again.deleted) == (0, 0, 0)  # idempotent
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            partitions.prune(maint, "rate_counters", timedelta(hours=24))  # the day window reads 24 h
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            partitions.prune(maint, "sessions", timedelta(days=30))
    finally:
        maint.close()

    with psycopg.connect(fresh.superuser) as conn:
        names = _partitions(conn, "audit_events")
        assert f"audit_events_p{_day(40)}" not in names and f"audit_events_p{_day(32)}" not in names
        assert f"audit_events_p{_day(29)}" in names and f"audit_events_p{_day(-14)}" in names
        assert conn.execute("SELECT to_regclass(%s)", (f"audit_events_p{_day(40)}",)).fetchone() == (None,)
        kept = conn.execute("SELECT tool FROM audit_events WHERE tool LIKE 't%%' ORDER BY at DESC").fetchall()
        assert [k[0] for k in kept][:30] == [f"t{g}" for g in range(30)]  # the last 30 days, all there
        assert ("t35",) not in kept
        # Moved out of the default partition when its day's partition was made.
        early = conn.execute("SELECT tableoid::regclass::text FROM audit_events WHERE tool = 'early'")
        assert early.fetchone() == (f"audit_events_p{_day(-10)}",)
        gone = conn.execute("SELECT count(*) FROM audit_events WHERE tool = 'expired stray'")
        assert gone.fetchone() == (0,)


def test_the_maintenance_role_cannot_drop_a_partition_itself(pg: Any) -> None:
    """It reaches the partitions only through the two functions: no DDL of its own."""
    with psycopg.connect(pg.maint_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"DROP TABLE audit_events_p{_day(0)}")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"ALTER TABLE audit_events DETACH PARTITION audit_events_p{_day(0)}")


def test_two_prunes_at_once_leave_the_work_to_the_first(pg: Any) -> None:
    """The maintenance task may run twice at once (a schedule and a retry): the second waits a
    second for the first's lock, then reports itself busy instead of failing."""
    lock = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
    maint = Database(pg.maint_url, max_size=1)
    try:
        with psycopg.connect(pg.owner_url) as first:
            first.execute(lock, ("sessionvault_partitions/audit_events",))
            first.execute(lock, ("sessionvault_partitions/drop",))
            second = partitions.prune(maint, "audit_events", timedelta(days=90))
            assert (second.busy, second.created, second.detached, second.deleted) == (1, 0, 0, 0)
            assert partitions.drop_detached(maint) == 0
        assert partitions.prune(maint, "audit_events", timedelta(days=90)).busy == 0  # the lock gone
    finally:
        maint.close()
