"""The pieces around the `fleet` section's instances: PgBouncer in transaction mode in front of
the embedded PostgreSQL, a sampler of the server connections (pg_stat_activity), the CPU time
of a process tree from /proc, the instances' processes and users, and the driver's plain
HTTP/1.1 connection to one instance.

PgBouncer (Debian's package) runs as the user who owns the embedded server's data folder and
reaches its Unix socket directly, so no proxy in the benchmark's process stands between them
(tests/support/pgbouncer.py puts a Python TCP proxy there, which is right for a test and wrong
for a throughput figure: it would share the driver's interpreter lock)."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .common import ROOT, make_settings
from .workload import free_port

ROLES = ("sessionvault_app", "sessionvault_admin")


class Bouncer:
    """PgBouncer, pool_mode = transaction, `pool` server connections at most."""

    def __init__(self, owner_url: str, pgdata: Path, pool: int, clients: int) -> None:
        if shutil.which("pgbouncer") is None:
            raise RuntimeError("pgbouncer is not installed (apt-get install pgbouncer)")
        base = conninfo_to_dict(owner_url)
        self.socket_dir, self.pg_port = str(base["host"]), str(base.get("port") or 5432)
        self.database = str(base.get("dbname") or "sessionvault")
        self.runs_as = pwd.getpwuid(pgdata.stat().st_uid).pw_name
        self.port = free_port()
        self.pool, self.clients = pool, clients
        self.dir = Path(tempfile.mkdtemp(prefix="sv-fleet-bouncer-"))
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, role_url: str) -> str:
        params = {k: v for k, v in conninfo_to_dict(role_url).items() if k != "hostaddr"}
        params.update(host="127.0.0.1", port=str(self.port), sslmode="disable", password="")
        return make_conninfo(**params)

    def __enter__(self) -> Bouncer:
        ini = self.dir / "pgbouncer.ini"
        ini.write_text(
            "[databases]\n"
            f"{self.database} = host={self.socket_dir} port={self.pg_port} dbname={self.database}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.dir / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {self.pool}\nmax_db_connections = {self.pool}\n"
            "reserve_pool_size = 0\nmin_pool_size = 0\n"
            f"max_client_conn = {self.clients + 20}\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
            f"logfile = {self.dir / 'pgbouncer.log'}\n"
        )
        (self.dir / "users.txt").write_text("".join(f'"{role}" ""\n' for role in ROLES))
        command = ["pgbouncer", str(ini)]
        if os.geteuid() == 0:  # PgBouncer refuses root: it runs as the data folder's owner
            for path in (self.dir, *self.dir.iterdir()):
                shutil.chown(path, self.runs_as)
            command = ["runuser", "-u", self.runs_as, "--", *command]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = self.dir / "pgbouncer.log"
                raise RuntimeError(f"pgbouncer exited: {log.read_text() if log.exists() else ''}")
            try:
                psycopg.connect(self.url_for("sessionvault_app"), connect_timeout=2).close()
                return self
            except psycopg.OperationalError:
                time.sleep(0.1)
        raise RuntimeError("pgbouncer did not answer within 10 s")

    def url_for(self, role: str) -> str:
        return make_conninfo(
            host="127.0.0.1", port=str(self.port), dbname=self.database, user=role, sslmode="disable"
        )

    def pid(self) -> int:
        """PgBouncer's own pid (under runuser when started as root)."""
        assert self.process is not None
        proc = psutil.Process(self.process.pid)
        for child in proc.children(recursive=True):
            if "pgbouncer" in child.name():
                return int(child.pid)
        return int(proc.pid)

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class ConnectionSampler(threading.Thread):
    """Counts the app role's server connections in pg_stat_activity every `every` seconds,
    over a direct connection as the owner (which is not counted)."""

    def __init__(self, owner_url: str, role: str = "sessionvault_app", every: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.owner_url, self.role, self.every = owner_url, role, every
        self.samples: list[tuple[int, int]] = []  # (connections, of which active)
        self._done = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.owner_url, autocommit=True) as conn:
            while not self._done.is_set():
                row = conn.execute(
                    "SELECT count(*), count(*) FILTER (WHERE state = 'active') FROM pg_stat_activity"
                    " WHERE usename = %s AND backend_type = 'client backend'",
                    (self.role,),
                ).fetchone()
                if row is not None:
                    self.samples.append((int(row[0]), int(row[1])))
                self._done.wait(self.every)

    def stop(self) -> list[tuple[int, int]]:
        self._done.set()
        self.join(timeout=5)
        return self.samples


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and all its descendants, live and exited: its own time, the
    time of the children it has reaped (cutime/cstime in /proc), and every live descendant's."""
    try:
        root = psutil.Process(pid)
        t = root.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in root.children(recursive=True):
            try:
                c = child.cpu_times()
                total += c.user + c.system
            except psutil.NoSuchProcess:
                pass
        return float(total)
    except psutil.NoSuchProcess:
        return 0.0


def postmaster_pid(pgdata: Path) -> int:
    return int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])


def spawn(
    ports: list[int], url: str, master_key: str, salt: str, limit: int
) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "BENCH_DATABASE_URL": url, "BENCH_MASTER_KEY": master_key, "BENCH_AUDIT_SALT": salt}
    env["BENCH_RATE_PER_MINUTE"] = str(limit)
    env["OPENBLAS_NUM_THREADS"] = "1"  # numpy for the stand-in embedder only: no thread pool per instance
    return [
        subprocess.Popen(
            [sys.executable, "-m", "benchmarks.fleet_serve", str(port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=tempfile.TemporaryFile(),
        )
        for port in ports
    ]


def wait_healthy(ports: list[int], procs: list[subprocess.Popen[bytes]]) -> None:
    import httpx2

    deadline = time.monotonic() + 180
    pending = set(ports)
    while pending and time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise RuntimeError("an instance exited while starting")
        for port in list(pending):
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    pending.discard(port)
            except httpx2.HTTPError:
                pass
        time.sleep(0.3)
    if pending:
        raise RuntimeError(f"{len(pending)} instance(s) did not start within 180 s")


def users_with_keys(admin_url: str, app_url: str, master_key: str, salt: str, count: int) -> list[str]:
    from sessionvault.db.pool import Database
    from sessionvault.runtime import key_provider
    from sessionvault.service import accounts

    provider = key_provider(make_settings(app_url, master_key, salt))
    admin = Database(admin_url, max_size=1)
    try:
        return [
            accounts.create_key(admin, accounts.create_user(admin, provider, f"fleet-{n:05d}"), "fleet")[0]
            for n in range(count)
        ]
    finally:
        admin.close()


class Instance:
    """One instance and the driver's kept-alive connection to it (one request at a time)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def call(self, tool: str, arguments: dict[str, object], key: str) -> tuple[int, dict]:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        ).encode()
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        self.writer.write(
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: 2025-06-18\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        status = int((await self.reader.readline()).split()[1])
        headers = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            data = await self.reader.readexactly(int(headers["content-length"]))
        else:  # chunked
            data = b""
            while size := int((await self.reader.readline()).strip(), 16):
                data += await self.reader.readexactly(size + 2)
            await self.reader.readline()
        if headers.get("connection") == "close":
            self.writer.close()
            self.reader = self.writer = None
        if status != 200:
            return status, {}
        text = data.decode()
        if text.startswith(("event:", "data:")):
            text = [ln[5:] for ln in text.splitlines() if ln.startswith("data:")][-1]
        message = json.loads(text)
        return status, message.get("result") or {"isError": True, "error": message.get("error")}
