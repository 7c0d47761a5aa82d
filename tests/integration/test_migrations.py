import secrets
import shutil

import psycopg
import pytest
from psycopg import sql

from sessionvault.db import roles
from sessionvault.db.migrations import checksum, migrate, migrations_dir
from sessionvault.errors import ConfigError, ProvisionFailed


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


@pytest.mark.parametrize("power", ["SUPERUSER", "BYPASSRLS"])
def test_a_role_that_could_bypass_row_level_security_is_never_given_a_password(pg, power):
    role = f"sv_throwaway_{secrets.token_hex(4)}"
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:  # the embedded owner: a superuser
        conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN " + power).format(sql.Identifier(role)))
        try:
            with pytest.raises(ProvisionFailed, match="refusing to let it log in"):
                roles.set_login_password(conn, role, "letters0and0digits")
            login = conn.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            assert login == (False,)
        finally:
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_the_owner_is_never_given_a_login_password_but_the_serving_roles_pass(pg):
    with psycopg.connect(pg.owner_url, autocommit=True) as conn:
        owner = conn.execute("SELECT current_user").fetchone()[0]  # type: ignore[index]
        with pytest.raises(ProvisionFailed, match="is the owner"):
            roles.check_unprivileged(conn, owner)
        for role in roles.LOGIN_ROLES:
            roles.check_unprivileged(conn, role)  # created by the migrations without either power
