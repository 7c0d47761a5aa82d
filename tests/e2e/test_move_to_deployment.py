"""Moving from the laptop to a deployment is two commands, piped (docs/export.md):

    sessionvault export --url <local> | sessionvault import ndjson - --url <deployed>

run here as two real processes, from the local server (the `server` fixture) to a second
server on its own database with another master key: every session and every version arrives,
in order, and decrypts there; running the move again adds nothing."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sessionvault import names
from sessionvault.core import records
from sessionvault.core.keys import WrappedKey
from sessionvault.db.pool import Database
from sessionvault.local.host import embedded
from sessionvault.local.remote import api_client
from sessionvault.local.remote.transport import Api
from sessionvault.runtime import Runtime, open_runtime
from sessionvault.service import accounts, portability
from sessionvault.service.principal import Principal

from ..conftest import ServerThread, hook_key, make_settings, make_user, proof_for
from ..support.jsonrpc import tool_result
from .test_api import save

OTHER_MASTER_KEY = base64.b64encode(os.urandom(32)).decode()
REPO = "github.com/acme/widget"


@dataclass
class Deployment:
    """The second server: its own database, its own master key, its own users."""

    server: ServerThread
    runtime: Runtime
    admin: Database
    owner_url: str


@pytest.fixture(scope="module")
def deployed() -> Iterator[Deployment]:
    # Not pytest's tmp_path: that parent is 0700 and, as root, postgres runs as its own user.
    home = Path(tempfile.mkdtemp(prefix="sv-deployed-"))
    db = embedded.start(home)
    admin = Database(db.admin_url, max_size=2)
    rt = open_runtime(make_settings(db, master_key=OTHER_MASTER_KEY))
    try:
        with ServerThread(rt) as server:
            yield Deployment(server, rt, admin, db.owner_url)
    finally:
        rt.close()
        admin.close()
        embedded.stop(home)
        shutil.rmtree(home, ignore_errors=True)


def deployed_user(d: Deployment) -> tuple[str, Principal]:
    user_id = accounts.create_user(d.admin, d.runtime.keys.provider, f"moved-{os.urandom(4).hex()}")
    # the checkpoint scope too: an export's checkpoints come along only with it (docs/export.md)
    key, _ = accounts.create_key(d.admin, user_id, "laptop", ("read", "write", "delete", "checkpoint"))
    with d.admin.identity() as conn:
        row = conn.execute("SELECT dek_wrapped, key_id FROM users WHERE id = %s", (user_id,)).fetchone()
    return key, Principal(user_id, WrappedKey.from_row(row), proof=proof_for(user_id, d.owner_url))


def move(state: Path, local_url: str, local_key: str, deployed_url: str, deployed_key: str) -> dict[str, Any]:
    """`export --url local | import ndjson - --url deployed`: two processes, each with its own
    key in its own environment (as docs/export.md writes it), both of which must succeed."""
    base = {**os.environ, names.HOME_ENV: str(state)}
    base.pop(names.URL_ENV, None)
    command = [sys.executable, "-m", "sessionvault.cli.main"]
    exporter = subprocess.Popen(
        [*command, "export", "--url", local_url],
        env={**base, names.KEY_ENV: local_key},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    importer = subprocess.Popen(
        [*command, "import", "ndjson", "-", "--url", deployed_url, "--json"],
        env={**base, names.KEY_ENV: deployed_key},
        stdin=exporter.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert exporter.stdout is not None
    exporter.stdout.close()  # the importer holds the pipe's read end now
    out, import_err = importer.communicate(timeout=120)
    export_err = exporter.communicate(timeout=120)[1]
    assert exporter.returncode == 0, export_err.decode()
    assert importer.returncode == 0, import_err.decode()
    assert b"exported" in export_err and b"plaintext" in export_err
    result: dict[str, Any] = json.loads(out)
    return result


def test_every_session_and_version_moves_to_a_server_with_another_master_key(
    server, runtime, deployed, tmp_path
) -> None:
    source = make_user(runtime)
    for n in range(1, 4):
        save(server.url, source.key, name="auth-jwt", summary=f"step {n}", repo=REPO, plan=[f"step {n}"])
    save(
        server.url,
        hook_key(source),  # a checkpoint is the hooks' to save (issue 35)
        name="auto/claude-code/496a25d3",
        summary="Café ✓ — «unicode» survives",
        repo="git@github.com:Acme/Widget.git",
        decisions=[{"decision": "keep UTF-8", "reason": "names are not ASCII"}],
        todos=["ship"],
        files=["src/ü.py"],
        errors=["boom"],
        tried=["latin-1: mangled"],
        branch="main",
        commit="0123456789abcdef0123456789abcdef01234567",
        client="claude-code",
    )
    save(server.url, source.key, name="auth-jwt", summary="step 4", repo=REPO, plan=["step 4"], handoff=True)
    tool_result(server.url, source.key, "load_session", repo=REPO, accept=True, client="codex")
    save(server.url, source.key, name="notes", summary="other", repo="github.com/acme/other")
    save(server.url, source.key, name="notes", summary="other, again", repo="github.com/acme/other")
    local = Api.at(server.url, source.key)
    expected = {
        s["name"]: api_client.session_versions(local, s["name"])["versions"]
        for s in api_client.list_sessions(local, limit=100)["sessions"]
    }
    assert {name: len(v) for name, v in expected.items()} == {
        "auth-jwt": 4,
        "auto/claude-code/496a25d3": 1,
        "notes": 2,
    }

    key, principal = deployed_user(deployed)
    first = move(tmp_path / "state", server.url, source.key, deployed.server.url, key)
    assert (first["sessions"], first["versions_added"], first["versions_already_there"]) == (3, 7, 0)
    assert first["problems"] == [] and first["stopped"] == ""

    # Every version arrives, in order, and decrypts on the other server (loaded one by one).
    there = Api.at(deployed.server.url, key)
    for name, versions in expected.items():
        moved = api_client.session_versions(there, name)["versions"]
        assert [v["record"] for v in moved] == [v["record"] for v in versions], name
        for number, version in zip((v["version"] for v in moved), versions, strict=True):
            loaded: dict[str, Any] = dict(api_client.get_session(there, name, version=number))
            # load_session leaves out an empty branch or commit
            fields = [f for f in portability.SAVED_FIELDS if f != "name"]
            assert {f: loaded.get(f, "") for f in fields} == {f: version["record"][f] for f in fields}
    # ... under the other master key: its own key wrapped the user's data key, which the
    # laptop's key cannot unwrap.
    assert principal.wrapped_dek.key_id != source.principal.wrapped_dek.key_id
    assert runtime.keys.provider.key_id != deployed.runtime.keys.provider.key_id
    with pytest.raises(Exception):  # noqa: B017 - whichever error the AEAD raises: it must not open
        runtime.keys.provider.unwrap(principal.user_id, principal.wrapped_dek)
    newest = deployed.runtime.vault.load(principal, records.parse(records.LoadArgs, {"name": "auth-jwt"}))
    assert (newest["summary"], newest["versions"]) == ("step 4", [4, 3, 2, 1])
    # A handoff's state belongs to the clients that saw it: it is not offered again there.
    assert api_client.list_handoffs(there)["handoffs"] == []

    again = move(tmp_path / "state", server.url, source.key, deployed.server.url, key)
    assert (again["versions_added"], again["versions_already_there"]) == (0, 7)
    for name, versions in expected.items():
        assert len(api_client.session_versions(there, name)["versions"]) == len(versions)
