import shutil

import psycopg
import pytest

from sessionvault.db.migrations import checksum, migrate, migrations_dir
from sessionvault.errors import ConfigError


def test_rerunning_migrations_is_a_no_op(pg):
    assert migrate(pg.owner_url) == []
    with psycopg.connect(pg.owner_url) as conn:
        recorded = conn.execute("SELECT version, checksum FROM schema_migrations ORDER BY 1").fetchall()
    assert recorded == [(p.stem, checksum(p)) for p in sorted(migrations_dir().glob("*.sql"))]


def test_a_migration_edited_after_it_ran_is_refused(pg, tmp_path):
    folder = tmp_path / "migrations"
    shutil.copytree(migrations_dir(), folder)
    first = sorted(folder.glob("*.sql"))[0]
    first.write_text(first.read_text() + "\n-- an edit in place\n")
    with pytest.raises(ConfigError, match=f"{first.stem} changed after this database applied"):
        migrate(pg.owner_url, folder)
