"""`sessionvault backup` and `restore`, run as a user runs them: processes against a state folder
whose embedded server is serving (and saving) at the time; then a server on the restored folder
serves every version of every session exactly as the first one did.

The master key is not in a backup: a restore with another key, or none, is refused before it
writes anything, and so is one into a folder that is not empty."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sessionvault.core.keys import parse_master_key
from sessionvault.local.host import backup as backups

from ..conftest import free_port
from ..support.jsonrpc import tool_result

pytestmark = pytest.mark.timeout(600)

SERVER_ENV = {
    "SESSIONVAULT_EMBEDDINGS": "none",
    "SESSIONVAULT_RATE_PER_MINUTE": "100000",
    "SESSIONVAULT_RATE_PER_DAY": "100000",
    "SESSIONVAULT_HISTORY_KEEP": "100",  # nothing pruned while the test compares versions
}


def state_folder() -> Path:
    # Short and outside pytest's 0700 tmp_path: the socket lives in it, postgres runs as its own user.
    return Path(tempfile.mkdtemp(prefix="sv-bk-"))


def sessionvault(home: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONVAULT_", "DATABASE_"))}
    environ.update(SERVER_ENV, SESSIONVAULT_HOME=str(home), **env)
    return subprocess.run(
        [sys.executable, "-m", "sessionvault.cli.main", *argv],
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def stop_postgres(home: Path) -> None:
    """The embedded PostgreSQL of `home`, stopped if a crashed process left it running."""
    pid_file = home / "pgdata" / "postmaster.pid"
    deadline = time.monotonic() + 15
    while pid_file.exists() and time.monotonic() < deadline:
        try:
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGINT)  # fast shutdown
        except (OSError, ValueError, IndexError):
            break
        time.sleep(0.2)


class Server:
    """`sessionvault serve` on a free port, as a process of its own."""

    def __init__(self, home: Path) -> None:
        self.home, self.port = home, free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = home.parent / f"{home.name}-server.log"

    def __enter__(self) -> Server:
        environ = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONVAULT_", "DATABASE_"))}
        environ.update(SERVER_ENV, SESSIONVAULT_HOME=str(self.home))
        self.out = self.log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sessionvault.cli.main", "serve", "--port", str(self.port)],
            env=environ,
            stdout=self.out,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while "SessionVault serving" not in self.log.read_text():
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        time.sleep(0.5)  # uvicorn binds just after the banner
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.send_signal(signal.SIGINT)  # as Ctrl-C: the server stops its database on the way out
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.out.close()
        stop_postgres(self.home)

    def call(self, key: str, tool: str, **arguments: Any) -> dict[str, Any]:
        result = tool_result(self.url, key, tool, **arguments)
        assert not result.get("isError"), result
        return result


def make_key(home: Path, user: str) -> str:
    made = sessionvault(home, "user", "create", user)
    assert made.returncode == 0, made.stderr
    made = sessionvault(home, "key", "create", "--user", user, "--label", "backup-test")
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def versions(server: Server, key: str, name: str) -> list[int]:
    head = server.call(key, "load_session", name=name)["structuredContent"]
    return sorted(int(v) for v in head["versions"])


def every_version(server: Server, keys: dict[str, str]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """What the server answers for every version of every session of every user: the whole
    tools/call result (the text the model reads and the structured content)."""
    served: dict[tuple[str, str, int], dict[str, Any]] = {}
    for user, key in keys.items():
        listed = server.call(key, "list_sessions", limit=100)["structuredContent"]["sessions"]
        for session in listed:
            for version in versions(server, key, session["name"]):
                result = server.call(key, "load_session", name=session["name"], version=version)
                served[(user, session["name"], version)] = result
    return served


def stored_rows(home: Path) -> list[tuple[Any, ...]]:
    """Every stored version as the database holds it (ciphertext and all), read as the owner."""
    from sessionvault.local.host import embedded

    db = embedded.start(home)
    try:
        with psycopg.connect(db.owner_url) as conn:
            return conn.execute(
                "SELECT u.name, s.name, v.version, v.nonce, v.ciphertext, v.client, v.saved_at, s.preview,"
                " s.meta_mac FROM session_versions v JOIN sessions s ON s.id = v.session_id"
                " JOIN users u ON u.id = v.user_id ORDER BY 1, 2, 3"
            ).fetchall()
    finally:
        embedded.stop(home)


@pytest.fixture(scope="module")
def folders() -> Iterator[dict[str, Path]]:
    made = {name: state_folder() for name in ("original", "restored", "wrong", "nokey", "busy")}
    yield made
    for home in list(made.values()):
        stop_postgres(home)
        shutil.rmtree(home, ignore_errors=True)
        for leftover in (f"{home.name}-server.log", f"{home.name}.backup"):
            (home.parent / leftover).unlink(missing_ok=True)


@pytest.fixture(scope="module")
def backed_up(folders: dict[str, Path]) -> dict[str, Any]:
    """A state folder with two users' sessions in several versions (a handoff among them),
    backed up while its server runs and a client keeps saving."""
    home = folders["original"]
    keys = {"alice": make_key(home, "alice"), "bob": make_key(home, "bob")}
    with Server(home) as server:
        for i in range(1, 4):
            server.call(
                keys["alice"],
                "save_session",
                name="checkout-refactor",
                repo="github.com/acme/shop",
                summary=f"Split checkout, step {i}",
                plan=["extract cart", "extract payment"],
                decisions=[{"decision": "use Stripe intents", "reason": f"SCA, take {i}"}],
                todos=[f"payment tests {i}"],
                files=["src/checkout.py"],
                errors=["TypeError in receipt totals"],
                tried=["caching totals: stale prices"],
                client="claude-code",
                branch="main",
                commit="a" * 40,
            )
        server.call(keys["alice"], "save_session", name="search-index", summary="Elastic → pg", handoff=True)
        for i in range(1, 3):
            server.call(keys["bob"], "save_session", name="notes", summary=f"bob's v{i} ✓ ünïcode")

        stop = threading.Event()
        saved: list[int] = []

        def keep_saving() -> None:  # a client at work while the backup runs
            while not stop.is_set() and len(saved) < 40:
                out = server.call(keys["bob"], "save_session", name="busy", summary=f"busy {len(saved)}")
                saved.append(out["structuredContent"]["version"])

        writer = threading.Thread(target=keep_saving)
        writer.start()
        while not saved:
            time.sleep(0.05)
        file = home.parent / f"{home.name}.backup"
        done = sessionvault(home, "backup", str(file))
        stop.set()
        writer.join()
        assert done.returncode == 0, done.stderr
        original = every_version(server, keys)
    return {"file": file, "keys": keys, "output": done.stdout, "served": original, "saved": saved}


def test_the_backup_says_the_master_key_is_not_in_it(backed_up: dict[str, Any]) -> None:
    out = backed_up["output"]
    assert "while a server was running" in out and "NOT in the backup" in out
    with tarfile.open(backed_up["file"]) as tar:
        assert sorted(tar.getnames()) == [backups.DUMP, backups.MANIFEST, backups.MAC]
        manifest = json.loads(tar.extractfile(backups.MANIFEST).read())  # type: ignore[union-attr]
        dump = tar.extractfile(backups.DUMP).read()  # type: ignore[union-attr]
    assert manifest["master_key_included"] is False and manifest["server_running"] is True
    assert dump.startswith(b"PGDMP")  # pg_dump's custom format
    assert oct(backed_up["file"].stat().st_mode & 0o777) == "0o600"


def test_a_restored_server_serves_every_version_byte_identical(
    folders: dict[str, Path], backed_up: dict[str, Any]
) -> None:
    original, restored = folders["original"], folders["restored"]
    shutil.copy2(original / "master.key", restored / "master.key")  # "empty" but for the key
    done = sessionvault(restored, "restore", str(backed_up["file"]))
    assert done.returncode == 0, done.stderr
    assert "no master key" in done.stdout and "authenticates it" in done.stdout
    assert (restored / "master.key").read_bytes() == (original / "master.key").read_bytes()

    with Server(restored) as server:
        served = every_version(server, backed_up["keys"])  # the same API keys work there
    original_served: dict[tuple[str, str, int], dict[str, Any]] = backed_up["served"]
    busy = sorted(v for (user, name, v) in served if name == "busy")
    assert busy == list(range(1, len(busy) + 1)), busy  # a consistent snapshot: no gap, no torn save
    assert 1 <= len(busy) <= len(backed_up["saved"])
    expected = {k: v for k, v in original_served.items() if k[1] != "busy" or k[2] <= len(busy)}
    assert len(expected) >= 3 + 1 + 2 + 1
    assert list(served) == list(expected)
    for where, result in expected.items():
        if where[1] == "busy":  # the original went on saving after the snapshot: its head moved on
            moved = {"versions", "latest_version"}
            ours, theirs = served[where]["structuredContent"], result["structuredContent"]
            assert {k: v for k, v in ours.items() if k not in moved} == {
                k: v for k, v in theirs.items() if k not in moved
            }, where
            assert ours["latest_version"] == len(busy) and ours["versions"] == busy[::-1]
        else:  # the whole answer, the text the model reads included
            assert json.dumps(served[where], sort_keys=True) == json.dumps(result, sort_keys=True), where

    # ... and stored byte for byte: nonce, ciphertext, timestamps, the head's authenticated
    # columns (but busy's head, which moved on in the original).
    def comparable(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return [r[:7] if r[1] == "busy" else r for r in rows if r[1] != "busy" or r[2] <= len(busy)]

    assert comparable(stored_rows(restored)) == comparable(stored_rows(original))


def test_a_restore_with_another_key_or_none_is_refused_and_writes_nothing(
    folders: dict[str, Path], backed_up: dict[str, Any]
) -> None:
    wrong = folders["wrong"]
    other = base64.b64encode(os.urandom(32)).decode()
    done = sessionvault(wrong, "restore", str(backed_up["file"]), SESSIONVAULT_MASTER_KEY=other)
    assert done.returncode == 2
    assert "not the one this backup was made with" in done.stderr and "Nothing was restored" in done.stderr
    assert other not in done.stderr + done.stdout
    assert list(wrong.iterdir()) == []

    (wrong / "master.key").write_text(other + "\n")  # a wrong key copied into the folder: the same
    done = sessionvault(wrong, "restore", str(backed_up["file"]))
    assert done.returncode == 2 and "not the one this backup was made with" in done.stderr
    assert [p.name for p in wrong.iterdir()] == ["master.key"]

    nokey = folders["nokey"]
    done = sessionvault(nokey, "restore", str(backed_up["file"]))
    assert done.returncode == 2
    assert "does not hold the master key" in done.stderr and "SESSIONVAULT_MASTER_KEY" in done.stderr
    assert list(nokey.iterdir()) == []

    # The right key by SESSIONVAULT_MASTER_KEY_FILE, into a folder not made yet: restored, and the
    # key lands in the folder as master.key (what the embedded server reads).
    key_file, fresh = folders["original"] / "master.key", nokey / "fresh"
    done = sessionvault(fresh, "restore", str(backed_up["file"]), SESSIONVAULT_MASTER_KEY_FILE=str(key_file))
    assert done.returncode == 0, done.stderr
    assert parse_master_key((fresh / "master.key").read_text()) == parse_master_key(key_file.read_text())
    stop_postgres(fresh)


def test_a_restore_into_a_folder_that_is_not_empty_is_refused(
    folders: dict[str, Path], backed_up: dict[str, Any]
) -> None:
    key_file = str(folders["original"] / "master.key")
    for home in (folders["original"], folders["busy"]):  # a live state folder, and one with a stray file
        if home == folders["busy"]:
            (home / "notes.txt").write_text("mine\n")
        before = sorted(p.name for p in home.iterdir())
        done = sessionvault(home, "restore", str(backed_up["file"]), SESSIONVAULT_MASTER_KEY_FILE=key_file)
        assert done.returncode == 2
        assert "is not empty" in done.stderr and "Nothing was changed" in done.stderr
        assert sorted(p.name for p in home.iterdir()) == before


def test_a_damaged_backup_is_refused(folders: dict[str, Path], backed_up: dict[str, Any]) -> None:
    home = state_folder()
    try:
        damaged = home.parent / f"{home.name}.damaged"
        data = bytearray(backed_up["file"].read_bytes())
        data[len(data) // 2] ^= 0xFF  # one flipped byte inside the dump
        damaged.write_bytes(bytes(data))
        key_file = str(folders["original"] / "master.key")
        done = sessionvault(home, "restore", str(damaged), SESSIONVAULT_MASTER_KEY_FILE=key_file)
        assert done.returncode == 2 and "damaged" in done.stderr, done.stderr
        assert list(home.iterdir()) == []
        damaged.write_bytes(bytes(data[:1000]))  # cut short
        done = sessionvault(home, "restore", str(damaged), SESSIONVAULT_MASTER_KEY_FILE=key_file)
        assert done.returncode == 2 and "SessionVault backup" in done.stderr, done.stderr
        damaged.unlink()
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_backup_refuses_an_existing_file_and_a_folder_without_a_database(backed_up: dict[str, Any]) -> None:
    home = state_folder()
    try:
        done = sessionvault(home, "backup", str(home.parent / f"{home.name}.backup"))
        assert done.returncode == 2 and "no embedded database" in done.stderr
    finally:
        shutil.rmtree(home, ignore_errors=True)
    original = backed_up["file"]
    before = original.read_bytes()
    done = sessionvault(original.parent / original.name.removesuffix(".backup"), "backup", str(original))
    assert done.returncode == 2 and "already exists" in done.stderr
    assert original.read_bytes() == before


def rewrite(file: Path, dest: Path, **members: bytes) -> None:
    """A copy of the archive `file` with some members' bytes replaced (what an attacker can do)."""
    with tarfile.open(file) as tar:
        kept = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    kept.update(members)
    with tarfile.open(dest, "w") as tar:
        for name, data in kept.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def hostile(folders: dict[str, Path]) -> dict[str, Any]:
    """A backup whose database held, beside one user's session, what the review's crafted dump
    held: a function that runs `COPY ... TO PROGRAM` and a materialized view over it (refreshed
    by a full pg_restore), plus a trigger and an event trigger calling it. The backup tool signs
    it with the right key: the restore must still run none of it."""
    home = state_folder()
    marker = home.parent / f"{home.name}-pwned"
    key = make_key(home, "eve")
    with Server(home) as server:
        server.call(key, "save_session", name="kept", summary="the rows come back")
    from sessionvault.local.host import embedded

    db = embedded.start(home)
    program = f"touch {marker}"
    with psycopg.connect(db.owner_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION pwn() RETURNS int LANGUAGE plpgsql AS $$ BEGIN"
            f" EXECUTE 'COPY (SELECT 1) TO PROGRAM ' || quote_literal('{program}'); RETURN 1; END $$"
        )
        conn.execute("CREATE MATERIALIZED VIEW pwned AS SELECT pwn() AS x")
        conn.execute(
            "CREATE FUNCTION pwn_row() RETURNS trigger LANGUAGE plpgsql"
            " AS $$ BEGIN PERFORM pwn(); RETURN NEW; END $$"
        )
        conn.execute(
            "CREATE TRIGGER pwn_on_insert BEFORE INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION pwn_row()"
        )
        conn.execute(
            "CREATE FUNCTION pwn_ddl() RETURNS event_trigger LANGUAGE plpgsql"
            " AS $$ BEGIN PERFORM pwn(); END $$"
        )
        conn.execute("CREATE EVENT TRIGGER pwn_ddl ON ddl_command_end EXECUTE FUNCTION pwn_ddl()")
        conn.execute("CREATE ROLE pwn_admin SUPERUSER")
        conn.execute("ALTER ROLE sessionvault_app BYPASSRLS")  # and widen the serving role
    embedded.stop(home)
    file = home.parent / f"{home.name}.backup"
    done = sessionvault(home, "backup", str(file))
    assert done.returncode == 0, done.stderr
    marker.unlink()  # the view's creation ran it once, here, on purpose
    folders["hostile"] = home
    return {"file": file, "marker": marker, "key_file": home / "master.key", "api_key": key}


def test_a_tampered_archive_is_refused_before_anything_is_unpacked(
    folders: dict[str, Path], backed_up: dict[str, Any], hostile: dict[str, Any]
) -> None:
    """The review's attack: the dump swapped for a hostile one, the checksum recomputed, the key's
    fingerprint copied. The MAC under the master key catches it; nothing is written."""
    home = state_folder()
    try:
        with tarfile.open(backed_up["file"]) as tar:
            manifest = json.loads(tar.extractfile(backups.MANIFEST).read())  # type: ignore[union-attr]
        with tarfile.open(hostile["file"]) as tar:
            evil = tar.extractfile(backups.DUMP).read()  # type: ignore[union-attr]
        manifest["dump_sha256"] = hashlib.sha256(evil).hexdigest()
        forged = home.parent / f"{home.name}.forged"
        rewrite(
            backed_up["file"], forged, **{backups.DUMP: evil, backups.MANIFEST: json.dumps(manifest).encode()}
        )
        key_file = str(folders["original"] / "master.key")
        done = sessionvault(home, "restore", str(forged), SESSIONVAULT_MASTER_KEY_FILE=key_file)
        assert done.returncode == 2
        assert "fails its authentication check" in done.stderr and "Nothing was restored" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert list(home.iterdir()) == []

        manifest["format"] = "sessionvault-backup/1"  # an old, unauthenticated archive: refused too
        rewrite(backed_up["file"], forged, **{backups.MANIFEST: json.dumps(manifest).encode()})
        done = sessionvault(home, "restore", str(forged), SESSIONVAULT_MASTER_KEY_FILE=key_file)
        assert done.returncode == 2 and "before archives were authenticated" in done.stderr, done.stderr
        assert list(home.iterdir()) == []
        forged.unlink()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert not hostile["marker"].exists()


def test_a_restore_runs_nothing_the_dump_holds_only_its_rows(
    folders: dict[str, Path], hostile: dict[str, Any]
) -> None:
    """Even an archive with a valid MAC (someone holding the key, or a database someone tampered
    with before the backup) brings back rows only: no function, view, trigger, event trigger or
    role of the dump is created, the program never runs, and the serving roles are as our
    migrations make them."""
    home = folders["restored_hostile"] = state_folder()
    done = sessionvault(
        home, "restore", str(hostile["file"]), SESSIONVAULT_MASTER_KEY_FILE=str(hostile["key_file"])
    )
    assert done.returncode == 0, done.stderr
    assert not hostile["marker"].exists()
    from sessionvault.local.host import embedded

    db = embedded.start(home)
    try:
        with psycopg.connect(db.owner_url) as conn:
            one = conn.execute
            assert one("SELECT count(*) FROM pg_proc WHERE proname LIKE 'pwn%'").fetchone() == (0,)
            assert one("SELECT count(*) FROM pg_matviews WHERE matviewname = 'pwned'").fetchone() == (0,)
            assert one("SELECT count(*) FROM pg_trigger WHERE tgname = 'pwn_on_insert'").fetchone() == (0,)
            assert one("SELECT count(*) FROM pg_event_trigger").fetchone() == (0,)
            assert one(
                "SELECT count(*) FROM pg_roles WHERE rolname IN ('pwn_admin', 'sessionvault_restore')"
            ).fetchone() == (0,)
            assert one(
                "SELECT bool_or(rolsuper OR rolbypassrls) FROM pg_roles WHERE rolname LIKE 'sessionvault\\_%'"
            ).fetchone() == (False,)
            assert one("SELECT count(*) FROM sessions").fetchone() == (1,)
    finally:
        embedded.stop(home)
    with Server(home) as server:  # and the rows serve: the user's key and session came back
        loaded = server.call(hostile["api_key"], "load_session", name="kept")["structuredContent"]
    assert loaded["summary"] == "the rows come back"
    assert not hostile["marker"].exists()
