"""What stops a second server before it prints anything: the state folder's lock and the port.

A running server holds an exclusive `flock` on `server.lock` in its state folder for its whole
life; the kernel drops it when the process ends, however it ends, so a crash leaves nothing
stale. The holder's pid is written inside the file, for the message only: the lock, not the
pid, says whether the folder is in use.

The port is bound before the quick start is printed (and the bound socket handed to uvicorn),
so "port 8765 is in use" comes first; its owner's pid is found through /proc where it can be."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from sessionvault.errors import ConfigError, StateInUse
from sessionvault.local import config
from sessionvault.names import HOME_ENV, PORT_ENV

LOCK_FILE = "server.lock"


@dataclass
class StateLock:
    """The held lock; `release` (or the process's end) frees the folder."""

    home: Path
    fd: int | None

    def release(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # no pid left behind to mislead a reader
            os.close(fd)  # closing the last descriptor drops the flock


def _pid_in(fd: int) -> int | None:
    try:
        text = os.pread(fd, 64, 0).decode().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def _in_use(home: Path, pid: int | None, doing: str) -> StateInUse:
    by = f" by a SessionVault server (pid {pid})" if pid else " by a SessionVault server"
    return StateInUse(f"the state folder {home} is in use{by}: stop it before {doing}")


def acquire(home: Path) -> StateLock:
    """Lock `home` for this process (creating the folder: only `dev` and `serve` call this),
    or raise StateInUse naming the pid that holds it."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(home / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        pid = _pid_in(fd)
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise StateInUse(
                f"the state folder {home} is in use by another SessionVault server"
                + (f" (pid {pid})" if pid else "")
                + f": stop it, or set {HOME_ENV} to another folder"
            ) from None
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return StateLock(home, fd)


def holder(home: Path) -> int | None:
    """0 or the pid of the process that holds `home`'s lock (0: held, pid unreadable); None
    when no process does. Never creates anything."""
    try:
        fd = os.open(home / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return _pid_in(fd) or 0
            raise
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def refuse_if_held(home: Path, doing: str) -> None:
    """Raise StateInUse when a server holds `home` (for commands that must not run beside one)."""
    pid = holder(home)
    if pid is not None:
        raise _in_use(home, pid, doing)


# ---------------------------------------------------------------- where it serves


def record_address(home: Path, host: str, port: int) -> str:
    """Write where this process serves beside the lock (config.SERVING_FILE), whole or not at
    all: `connect`, `doctor`, the hooks and the bridge use it when no port or URL is configured,
    so `make dev PORT=N` is found. The URL, which is returned, is one a client can reach."""
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else "::1" if host == "::" else host
    url = f"http://{f'[{shown}]' if ':' in shown else shown}:{port}/mcp"
    path = home / config.SERVING_FILE
    aside = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    aside.write_text(json.dumps({"url": url, "pid": os.getpid()}) + "\n")
    os.replace(aside, path)
    return url


def forget_address(home: Path) -> None:
    """Remove the record when it is this process's (a newer server's is left alone)."""
    path = home / config.SERVING_FILE
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


# ---------------------------------------------------------------- the port


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, as uvicorn would open it, or ConfigError naming the
    process that has the port. Protocol IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on the
    accepted connections only then (listener.py says what 0 cost and sets it regardless)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: TIME_WAIT is no owner
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            owner = port_owner(port)
            by = f" by pid {owner[0]} ({owner[1]})" if owner else ""
            raise ConfigError(
                f"port {port} is in use{by}: stop that process, or pick another port"
                f" (--port N, or {PORT_ENV}=N)"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(False)
    return sock


def listening_inodes(port: int, proc: Path = Path("/proc")) -> set[str]:
    """The socket inodes listening on `port` (TCP, v4 and v6), from /proc/net/tcp{,6}."""
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != "0A":  # 0A: LISTEN
                continue
            if int(fields[1].rpartition(":")[2], 16) == port:
                inodes.add(fields[9])
    return inodes


def port_owner(port: int, proc: Path = Path("/proc")) -> tuple[int, str] | None:
    """(pid, command name) of a process listening on `port`, when /proc shows it (Linux; only
    this user's processes unless root)."""
    inodes = {f"socket:[{inode}]" for inode in listening_inodes(port, proc)}
    if not inodes:
        return None
    try:
        pids = [p for p in proc.iterdir() if p.name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            fds = list((pid / "fd").iterdir())
        except OSError:
            continue  # another user's process, or gone
        for fd in fds:
            try:
                if os.readlink(fd) in inodes:
                    try:
                        name = (pid / "comm").read_text().strip()
                    except OSError:
                        name = "?"
                    return int(pid.name), name
            except OSError:
                continue
    return None
