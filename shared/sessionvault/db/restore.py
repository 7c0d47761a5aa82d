"""Loading a backup's rows into a schema that our own migrations made (`sessionvault restore`).

Nothing a dump supplies is executed: the caller hands over rows already split by table, and
every statement here is built from names found in this database's own catalog. The rows go in
through a role made for the load alone: it may log in, use the schema and INSERT, and bypass
row-level security (the rows belong to every user), but it is no superuser, owns nothing and
is dropped when the load ends. Whatever a crafted dump held, the most it can do is add rows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

RESTORE_ROLE = "sessionvault_restore"
# The migrations write these; a dump's copy is not loaded: the migrations' own record, and the
# keys of the tenant proofs (migration 0020), which are this database's own (a proof lives 60 s,
# so no restored row could need an old key).
BOOKKEEPING = frozenset({"schema_migrations", "schema_functions", "tenant_proof_keys"})

_TABLES = """
SELECT c.relname, a.attname FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
"""
_REFERENCES = """
SELECT c.relname AS child, p.relname AS parent FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
WHERE k.contype = 'f' AND k.conrelid <> k.confrelid
"""
_IDENTITIES = """
SELECT c.relname, a.attname FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
WHERE a.attidentity <> '' AND NOT a.attisdropped
"""


def columns(owner_url: str) -> dict[str, frozenset[str]]:
    """Each table of the schema (the migrations' bookkeeping aside) with its writable columns."""
    found: dict[str, set[str]] = {}
    with psycopg.connect(owner_url, autocommit=True) as conn:
        for table, column in conn.execute(_TABLES):
            found.setdefault(table, set()).add(column)
    return {table: frozenset(cols) for table, cols in found.items() if table not in BOOKKEEPING}


def references(owner_url: str) -> list[tuple[str, str]]:
    """(child, parent) for every foreign key between two tables of the schema."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        return [(str(child), str(parent)) for child, parent in conn.execute(_REFERENCES)]


@contextmanager
def loader_role(owner_url: str) -> Iterator[str]:
    """A connection string for the load's own role (see the module's docstring), dropped after."""
    role = sql.Identifier(RESTORE_ROLE)
    with psycopg.connect(owner_url, autocommit=True) as conn:
        database = sql.Identifier(str(conn.info.dbname))
        _drop_role(conn, role)  # left behind by a restore that was killed
        conn.execute(
            sql.SQL(
                "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION BYPASSRLS NOINHERIT"
            ).format(role)
        )
        conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM {}").format(database, role))
        conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(database, role))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(role))
        conn.execute(sql.SQL("GRANT INSERT ON ALL TABLES IN SCHEMA public TO {}").format(role))
        # Reading too: the schema's own triggers look rows up as the inserting role (migration
        # 0013 checks a key's user is a person). Nothing but our COPY statements runs as it.
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(role))
    try:
        yield make_conninfo("", **{**conninfo_to_dict(owner_url), "user": RESTORE_ROLE, "password": ""})
    finally:
        with psycopg.connect(owner_url, autocommit=True) as conn:
            _drop_role(conn, role)


def _drop_role(conn: psycopg.Connection, role: sql.Identifier) -> None:
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (RESTORE_ROLE,)).fetchone():
        conn.execute(sql.SQL("DROP OWNED BY {}").format(role))  # its grants
        conn.execute(sql.SQL("DROP ROLE {}").format(role))


def copy_rows(url: str, blocks: Iterable[tuple[str, tuple[str, ...], Path]]) -> None:
    """COPY each (table, columns, file of COPY text rows) in the order given, in one transaction:
    a failure anywhere leaves no row behind."""
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        for table, cols, rows in blocks:
            statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
                sql.Identifier("public", table), sql.SQL(", ").join(map(sql.Identifier, cols))
            )
            with cur.copy(statement) as copy, rows.open("rb") as source:
                for chunk in iter(lambda: source.read(1 << 20), b""):
                    copy.write(chunk)


def reset_identities(owner_url: str) -> None:
    """Identity columns continue after the loaded rows' largest value (COPY sets no sequence)."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        for table, column in conn.execute(_IDENTITIES).fetchall():
            statement = sql.SQL(
                "SELECT setval(pg_get_serial_sequence({qualified}, {col_text}),"
                " coalesce((SELECT max({col}) FROM {table}), 1), (SELECT count(*) > 0 FROM {table}))"
            ).format(
                qualified=sql.Literal(f"public.{table}"),
                col_text=sql.Literal(column),
                col=sql.Identifier(column),
                table=sql.Identifier("public", table),
            )
            conn.execute(statement)
