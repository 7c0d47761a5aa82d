"""PgBouncer in transaction mode (Debian's `pgbouncer` package) in front of the embedded
PostgreSQL: what Neon's pooled endpoint and RDS Proxy are, on this machine.

The embedded server listens on a Unix socket inside its data folder, which PgBouncer (it will
not run as root, so it runs as the package's `postgres` user) cannot reach: a `PgProxy` on
loopback TCP sits between them."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .pgproxy import PgProxy

ROLES = ("sessionvault_app", "sessionvault_admin")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class PgBouncer:
    def __init__(self, upstream_url: str) -> None:
        if shutil.which("pgbouncer") is None:
            raise RuntimeError(
                "pgbouncer is not installed: `make test` installs it (apt-get install pgbouncer)"
            )
        self.proxy = PgProxy(upstream_url)
        self.port = _free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="sessionvault-pgbouncer-"))
        self.database = str(conninfo_to_dict(upstream_url).get("dbname") or "sessionvault")
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, role_url: str) -> str:
        """`role_url` (same user) through the bouncer."""
        params = {k: v for k, v in conninfo_to_dict(role_url).items() if k not in ("hostaddr",)}
        params.update(host="127.0.0.1", port=str(self.port), sslmode="disable", password="")
        return make_conninfo(**params)

    def __enter__(self) -> PgBouncer:
        self.proxy.start()
        ini = self.dir / "pgbouncer.ini"
        ini.write_text(
            "[databases]\n"
            f"{self.database} = host=127.0.0.1 port={self.proxy.port} dbname={self.database}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {self.dir / 'users.txt'}\n"
            "pool_mode = transaction\n"
            "default_pool_size = 4\n"
            "max_client_conn = 200\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
            f"logfile = {self.dir / 'pgbouncer.log'}\n"
        )
        (self.dir / "users.txt").write_text("".join(f'"{role}" ""\n' for role in ROLES))
        command = ["pgbouncer", str(ini)]
        if os.geteuid() == 0:  # PgBouncer refuses to run as root
            shutil.chown(self.dir, "postgres")
            for path in self.dir.iterdir():
                shutil.chown(path, "postgres")
            command = ["runuser", "-u", "postgres", "--", *command]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait_listening()
        return self

    def _wait_listening(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                log = (
                    (self.dir / "pgbouncer.log").read_text() if (self.dir / "pgbouncer.log").exists() else ""
                )
                raise RuntimeError(
                    f"pgbouncer exited: {self.process.stderr and self.process.stderr.read()!r} {log}"
                )
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("pgbouncer did not start listening")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.proxy.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
