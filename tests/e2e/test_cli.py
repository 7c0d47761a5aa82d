"""The `sessionvault` command in local mode, against its own embedded database."""

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from sessionvault.cli import main as cli
from sessionvault.local import embedded


@pytest.fixture(scope="module")
def home():
    path = Path(tempfile.mkdtemp(prefix="sessionvault-cli-"))
    yield path
    embedded.stop(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def local(home, monkeypatch):
    monkeypatch.setenv("SESSIONVAULT_HOME", str(home))
    monkeypatch.setenv("SESSIONVAULT_EMBEDDINGS", "none")
    monkeypatch.delenv("DATABASE_URL", raising=False)
    return home


def run(capsys, *argv):
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_users_and_keys_in_local_mode(local, capsys):
    assert run(capsys, "migrate")[1].strip() == "up to date"  # the embedded start migrated already
    code, user_id, _ = run(capsys, "user", "create", "carol")
    assert code == 0 and len(user_id.strip()) == 36
    assert run(capsys, "user", "create", "carol")[0] == 2  # a clear error, not a traceback
    code, key, _ = run(capsys, "key", "create", "--user", "carol", "--label", "laptop")
    key = key.strip()
    assert code == 0 and key.startswith("sv_live_")
    listing = run(capsys, "key", "list", "--user", "carol")[1]
    assert key[:12] in listing and "laptop" in listing and key not in listing
    assert run(capsys, "key", "revoke", key[:12]) == (0, "revoked 1 key(s)\n", "")
    assert "revoked" in run(capsys, "key", "list", "--user", "carol")[1]
    for mode in ("0o600",):
        assert oct((local / "master.key").stat().st_mode & 0o777) == mode
        assert oct((local / "audit.salt").stat().st_mode & 0o777) == mode


def test_admin_actions_locally_and_master_key_rotation(local, capsys):
    code, out, _ = run(capsys, "admin", "create_user", "name=dave")
    assert code == 0 and json.loads(out)["ok"] is True
    code, out, _ = run(capsys, "admin", "create_key", "user_id=dave", "label=ci")
    assert json.loads(out)["key"].startswith("sv_live_")
    assert run(capsys, "admin", "nope")[0] == 1
    before = (local / "master.key").read_text()
    code, out, _ = run(capsys, "rotate-master-key")
    assert code == 0 and json.loads(out.splitlines()[0])["remaining"] == 0
    assert (local / "master.key").read_text() != before
    assert list(local.glob("master.key.retired-*"))
    code, out, _ = run(capsys, "admin", "list_keys", "user_id=dave")  # still opens after rotation
    assert code == 0 and json.loads(out)["keys"][0]["label"] == "ci"


def test_master_key_rotation_refuses_while_a_server_uses_the_state_folder(local, capsys):
    import subprocess

    server = subprocess.Popen(["sleep", "30"])  # stands in for a live `sessionvault dev`
    try:
        (local / "server.pid").write_text(f"{server.pid}\n")
        before = (local / "master.key").read_text()
        code, _, err = run(capsys, "rotate-master-key")
        assert code == 2 and f"pid {server.pid}" in err
        assert (local / "master.key").read_text() == before
    finally:
        server.kill()
        server.wait()
    assert run(capsys, "rotate-master-key")[0] == 0  # a stale marker does not block
