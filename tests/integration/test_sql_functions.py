"""Every SQL function has one live text (`db/sql/functions/<name>.sql`), applied by the
migration runner after the migrations: a fresh database and one upgraded from any earlier
migration end with the same functions, on the embedded PostgreSQL 18 (owner a superuser) and on
a PostgreSQL 16 whose owner is only CREATEROLE (RDS's and Neon's shape)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sessionvault.db.migrations import function_files, migrate, migration_files, migrations_dir, version_of

from ..support.fresh import Fresh

_FUNCTIONS = """
    SELECT p.oid::regprocedure::text, pg_get_function_result(p.oid), l.lanname, p.prosrc,
           p.prosecdef, p.provolatile, p.proconfig, pg_get_userbyid(p.proowner),
           (SELECT array_agg(a::text ORDER BY a::text) FROM unnest(p.proacl) AS a)
    FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
    WHERE p.pronamespace = 'public'::regnamespace
      AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
    ORDER BY 1"""
_VERSIONS = [version_of(f) for f in migration_files(migrations_dir())]
_LAST_WITH_FUNCTIONS = "0020_tenant_proofs"  # the live files took over after it


def _functions(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(_FUNCTIONS).fetchall()


@pytest.mark.parametrize("earlier", [_VERSIONS[0], "0012_sealed_saves", _VERSIONS[-2]])
def test_a_database_upgraded_from_an_earlier_migration_has_the_functions_of_a_fresh_one(
    fresh: Fresh, fresh_twin: Fresh, earlier: str
) -> None:
    migrate(fresh.owner)
    migrate(fresh_twin.owner, through=earlier)
    migrate(fresh_twin.owner)
    made, upgraded = _functions(fresh.superuser), _functions(fresh_twin.superuser)
    assert len(made) == len(function_files(migrations_dir())) > 40
    assert upgraded == made


def test_every_function_in_the_catalogue_has_its_one_live_file(pg: Any) -> None:
    names = [row[0].split("(")[0] for row in _functions(pg.owner_url)]
    assert names == sorted(set(names)), "an overload: one name, one function"
    assert sorted(names) == [version_of(f) for f in function_files(migrations_dir())]


def test_no_migration_after_the_live_files_defines_a_function() -> None:
    later = [f for f in migration_files(migrations_dir()) if version_of(f) > _LAST_WITH_FUNCTIONS]
    for file in later:
        assert not re.search(r"CREATE\s+(OR\s+REPLACE\s+)?FUNCTION", file.read_text(), re.I), file.name


def test_a_changed_function_file_is_applied_and_an_unchanged_run_applies_nothing(
    fresh: Fresh, tmp_path: Path
) -> None:
    folder = tmp_path / "sql"
    shutil.copytree(migrations_dir(), folder)
    migrate(fresh.owner, folder)
    recorded = "SELECT name, checksum, applied_at FROM schema_functions ORDER BY name"
    with psycopg.connect(fresh.superuser) as conn:
        before = conn.execute(recorded).fetchall()

    changed = folder / "functions" / "sessionvault_random_key.sql"
    changed.write_text(changed.read_text().replace("SELECT sha256(", "SELECT /* changed */ sha256("))
    assert migrate(fresh.owner, folder) == []
    with psycopg.connect(fresh.superuser) as conn:
        after = conn.execute(recorded).fetchall()
        body = conn.execute("SELECT prosrc FROM pg_proc WHERE proname = 'sessionvault_random_key'").fetchone()
    assert body is not None and "/* changed */" in body[0]
    assert [r for r in after if r[0] != "sessionvault_random_key"] == [
        r for r in before if r[0] != "sessionvault_random_key"
    ]
    assert (
        dict((r[0], r[1]) for r in after)["sessionvault_random_key"]
        != dict((r[0], r[1]) for r in before)["sessionvault_random_key"]
    )

    migrate(fresh.owner, folder)
    with psycopg.connect(fresh.superuser) as conn:
        assert conn.execute(recorded).fetchall() == after
