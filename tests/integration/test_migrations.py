import psycopg

from sessionvault.migrations import migrate, migrations_dir


def test_rerunning_migrations_is_a_no_op(pg):
    assert migrate(pg.owner_url) == []
    with psycopg.connect(pg.owner_url) as conn:
        recorded = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    assert recorded == sorted(p.stem for p in migrations_dir().glob("*.sql"))
