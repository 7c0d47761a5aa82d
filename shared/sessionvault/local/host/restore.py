"""Restore of a backup (`sessionvault restore FILE`) into an empty state folder.

A backup file is input from anywhere: somebody could swap its dump for one holding a function
and a materialized view that runs `COPY ... TO PROGRAM` when refreshed. So, in this order:
1. the archive is authenticated before anything in it is unpacked or run: the manifest's MAC
   (local/host/backup.py) under the master key the user gives, which also proves it is the right key;
   then the dump against the manifest's checksum;
2. the schema is made by our own migrations (those the backup's database had applied), never by
   the dump: of the dump, only rows are read (`pg_restore --data-only` into a text file), split by
   table, each table and column checked against the schema, and loaded by COPY statements we
   build, as a role that is no superuser and owns nothing (db/restore.py): no function, view,
   trigger, role, `DO` block or event trigger of the dump is ever created or run;
3. the migrations this version adds run, and the serving roles are checked (no superuser, no
   BYPASSRLS, not the owner), as the AWS provisioner checks them.
A refusal is one line and leaves the folder as it was (a copied master.key aside)."""

from __future__ import annotations

import base64
import contextlib
import hmac
import json
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from sessionvault.db import restore as rows
from sessionvault.errors import ConfigError
from sessionvault.local.host.backup import (
    DATABASE,
    DUMP,
    FORMAT,
    KEY_FILE,
    MAC,
    MANIFEST,
    Result,
    key_fingerprint,
    key_id,
    key_ids,
    manifest_mac,
    read_key_file,
    row_counts,
    run_pg_tool,
    sha256_of,
)

ALLOWED_IN_EMPTY = frozenset({KEY_FILE})  # what an "empty" state folder may already hold
MAX_MANIFEST = 1 << 20  # a manifest is a few hundred bytes; a MAC 65
# pg_restore's own line before each table's rows, for tables and columns named as ours are.
_COPY_HEADER = re.compile(r"COPY public\.([a-z_][a-z0-9_]*) \(([a-z0-9_, ]*)\) FROM stdin;")


def restore(home: Path, source: Path, env: Mapping[str, str] | None = None) -> Result:
    """Restore the backup `source` into the empty state folder `home`, with the master key from
    `env` ($SESSIONVAULT_MASTER_KEY / _FILE) or a master.key already in `home`."""
    env = dict(os.environ if env is None else env)
    _check_empty(home)
    with tempfile.TemporaryDirectory(prefix="sessionvault-restore-") as work:
        manifest, key = _authenticated(home, source, env)
        dump = _unpack_dump(source, Path(work), manifest)
        wrote_key = _keep_key(home, key)
        try:
            counts = _load(home, dump, key, manifest, Path(work))
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


def _authenticated(home: Path, source: Path, env: Mapping[str, str]) -> tuple[dict[str, Any], bytes]:
    """The manifest, once its MAC checks out under the user's master key, and the key. Nothing
    else of the archive is read before this."""
    if not source.is_file():
        raise ConfigError(f"no backup at {source}")
    try:
        with tarfile.open(source, mode="r:") as tar:
            raw = _member(tar, MANIFEST).read(MAX_MANIFEST + 1)
            mac = (
                _member(tar, MAC).read(MAX_MANIFEST).strip().decode("ascii") if MAC in tar.getnames() else ""
            )
        manifest = json.loads(raw) if len(raw) <= MAX_MANIFEST else None
    except (tarfile.TarError, OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"{source} is not a SessionVault backup, or it is damaged ({exc})") from None
    if not isinstance(manifest, dict):
        raise ConfigError(f"{source} is not a SessionVault backup (its manifest is not one)")
    if manifest.get("format") != FORMAT:
        raise ConfigError(
            f"{source} is not a {FORMAT} backup (format {manifest.get('format')!r}); a backup made before"
            " archives were authenticated cannot be restored safely: make a new one with `sessionvault"
            " backup` from the folder it came from. Nothing was restored"
        )
    key = _offered_key(home, env)
    wanted = str((manifest.get("master_key_fingerprint") or {}).get("sha256", ""))
    if key_fingerprint(key) != wanted:
        raise ConfigError(
            f"the master key given is not the one this backup was made with (its fingerprint is"
            f" {key_fingerprint(key)[:16]}..., the backup's {wanted[:16]}...): without the right key no"
            " session in it can be read. Nothing was restored"
        )
    if not hmac.compare_digest(manifest_mac(key, raw), mac):
        raise ConfigError(
            f"{source} fails its authentication check (the manifest's MAC does not match under this"
            " master key): it was altered after `sessionvault backup` wrote it. Nothing was restored"
        )
    return manifest, key


def _keep_key(home: Path, key: bytes) -> bool:
    """The key in `home` as master.key (what the embedded server reads); whether it was written."""
    from sessionvault.local.host.secretfile import read_or_create_secret

    if (home / KEY_FILE).exists():
        return False
    home.mkdir(parents=True, exist_ok=True)
    read_or_create_secret(home / KEY_FILE, lambda: base64.b64encode(key).decode())
    return True


def _offered_key(home: Path, env: Mapping[str, str]) -> bytes:
    """The one master key the user gave ($SESSIONVAULT_MASTER_KEY, _FILE, or master.key in `home`)."""
    from sessionvault.core.keys import parse_master_key

    offered: list[tuple[str, bytes]] = []
    if env.get("SESSIONVAULT_MASTER_KEY"):
        offered.append(("$SESSIONVAULT_MASTER_KEY", parse_master_key(env["SESSIONVAULT_MASTER_KEY"])))
    if env.get("SESSIONVAULT_MASTER_KEY_FILE"):
        file = Path(env["SESSIONVAULT_MASTER_KEY_FILE"]).expanduser()
        offered.append((str(file), read_key_file(file)))
    in_home = home / KEY_FILE
    if in_home.exists():
        offered.append((str(in_home), read_key_file(in_home)))
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
    return offered[0][1]


def _unpack_dump(source: Path, work: Path, manifest: dict[str, Any]) -> Path:
    dump = work / DUMP
    try:
        with tarfile.open(source, mode="r:") as tar, dump.open("wb") as out:
            shutil.copyfileobj(_member(tar, DUMP), out)
    except (tarfile.TarError, OSError, KeyError) as exc:
        raise ConfigError(f"{source} is not a SessionVault backup, or it is damaged ({exc})") from None
    if sha256_of(dump) != manifest.get("dump_sha256"):
        raise ConfigError(f"{source} is damaged: its database dump does not match the manifest's checksum")
    return dump


def _member(tar: tarfile.TarFile, name: str) -> IO[bytes]:
    member = tar.getmember(name)
    handle = tar.extractfile(member) if member.isfile() else None
    if handle is None:
        raise KeyError(f"{name} is not a file in the archive")
    return handle


def _load(home: Path, dump: Path, key: bytes, manifest: dict[str, Any], work: Path) -> dict[str, int]:
    """A fresh embedded server in `home`; its database made anew by our migrations as far as the
    backup's had gone; the dump's rows loaded; then the migrations this version adds."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from sessionvault.db.migrations import enable_login, migrate, migration_files, migrations_dir, version_of
    from sessionvault.db.roles import LOGIN_ROLES, check_unprivileged
    from sessionvault.errors import ProvisionFailed
    from sessionvault.local.host import embedded

    ours = [version_of(f) for f in migration_files(migrations_dir())]
    theirs = [str(v) for v in manifest.get("migrations") or []]
    if not theirs or theirs != ours[: len(theirs)]:
        raise ConfigError(
            "this backup's database was made by another SessionVault version (its migrations are not a"
            " prefix of this one's): restore it with the version that made it, or a newer one"
        )
    db = embedded.start(home)
    server_url = make_conninfo("", **{**conninfo_to_dict(db.owner_url), "dbname": "postgres"})
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(DATABASE)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    migrate(db.owner_url, through=theirs[-1])
    data = work / "data.sql"
    run_pg_tool(home, "pg_restore", "--data-only", f"--file={data}", str(dump))
    tables = rows.columns(db.owner_url)
    blocks = _split_rows(data, work, tables)
    order = _parents_first(sorted(tables), rows.references(db.owner_url))
    with rows.loader_role(db.owner_url) as loader:
        rows.copy_rows(loader, sorted(blocks, key=lambda b: order.index(b[0])))
    rows.reset_identities(db.owner_url)
    migrate(db.owner_url)
    enable_login(db.owner_url, LOGIN_ROLES)
    try:
        with psycopg.connect(db.owner_url, autocommit=True) as conn:
            for role in LOGIN_ROLES:
                check_unprivileged(conn, role)
    except ProvisionFailed as exc:
        raise ConfigError(f"after the restore, {exc}") from None
    foreign = key_ids(db.owner_url) - {key_id(key)}
    if foreign:  # the MAC matched, so only a backup made with a mixed database gets here
        raise ConfigError(
            f"the restored users' data keys are wrapped by other keys: {', '.join(sorted(foreign))}"
        )
    return row_counts(db.owner_url)


def _split_rows(
    data: Path, work: Path, tables: dict[str, frozenset[str]]
) -> list[tuple[str, tuple[str, ...], Path]]:
    """Each table's rows from pg_restore's text output, as (table, columns, file of COPY rows).
    Every line outside a COPY block is ignored: nothing of it is run. A block for a table or a
    column this schema does not have is refused (the migrations' own bookkeeping is skipped)."""
    blocks: list[tuple[str, tuple[str, ...], Path]] = []
    out: IO[bytes] | None = None
    with data.open("rb") as source:
        for line in source:
            if out is not None:
                if line in (b"\\.\n", b"\\."):
                    out.close()
                    out = None
                else:
                    out.write(line)
                continue
            if not line.startswith(b"COPY "):
                continue
            header = _COPY_HEADER.fullmatch(line.decode("utf-8", "replace").rstrip("\n"))
            table = header.group(1) if header else ""
            cols = tuple(c.strip() for c in header.group(2).split(",")) if header else ()
            if table in rows.BOOKKEEPING:
                out = open(os.devnull, "wb")  # noqa: SIM115 (closed at the block's end)
                continue
            if table not in tables or not cols or not set(cols) <= tables[table]:
                raise ConfigError(
                    "the backup holds rows for a table or column this schema does not have: refused."
                    " Nothing was restored"
                )
            path = work / f"rows-{len(blocks)}.copy"
            blocks.append((table, cols, path))
            out = path.open("wb")
    if out is not None:
        out.close()
        raise ConfigError("the backup's rows end inside a table's data: it is damaged. Nothing was restored")
    return blocks


def _parents_first(tables: list[str], references: list[tuple[str, str]]) -> list[str]:
    """The tables ordered so that each comes after every table its foreign keys point to."""
    order: list[str] = []
    pending = list(tables)
    while pending:
        ready = [t for t in pending if all(p in order or p not in pending for c, p in references if c == t)]
        if not ready:  # a cycle of foreign keys: none in our schema; keep the rest as they are
            ready = pending[:]
        order.extend(ready)
        pending = [t for t in pending if t not in ready]
    return order


def _undo(home: Path, wrote_key: bool) -> None:
    """Leave `home` as empty as it was: a failed restore can simply be run again."""
    from sessionvault.local.host import embedded

    if (home / "pgdata").exists():
        with contextlib.suppress(Exception):  # not started, or already gone: it goes either way
            embedded.stop(home)
    for name in os.listdir(home) if home.exists() else []:
        if name == KEY_FILE and not wrote_key:
            continue
        path = home / name
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
