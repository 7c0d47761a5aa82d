"""The `sessionvault` command in local mode, against its own embedded database."""

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from sessionvault.cli import main as cli
from sessionvault.local.host import embedded


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
    code, said, _ = run(capsys, "user", "create", "carol")
    assert code == 0 and said.startswith("Created user carol (id ") and "key create --user carol" in said
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


def admin_json(capsys, *argv):
    code, out, err = run(capsys, "admin", *argv)
    return code, json.loads(out) if out.strip() else None, err


def test_an_unknown_admin_parameter_is_refused_and_nothing_is_done(local, capsys):
    assert admin_json(capsys, "create_user", "name=erin")[0] == 0
    # `scope` for `scopes` once made a read,write key: now it is refused, naming both.
    code, answer, _ = admin_json(capsys, "create_key", "user=erin", "scope=read")
    assert code == 1 and answer["ok"] is False and "key" not in answer
    assert "'scope'" in answer["error"] and "scopes" in answer["error"] and "label" in answer["error"]
    assert admin_json(capsys, "list_keys", "user=erin")[1]["keys"] == []  # no key was made
    code, answer, _ = admin_json(capsys, "list_keys", "user=erin", "colour=blue")
    assert code == 1 and "'colour'" in answer["error"]
    code, answer, _ = admin_json(capsys, "rotate_keys", "force=1")
    assert code == 1 and "'force'" in answer["error"] and "no parameters" in answer["error"]
    # The action is the first argument only, and a name given twice is not silently dropped.
    code, _, err = run(capsys, "admin", "list_keys", "action=delete_user", "user=erin")
    assert code == 2 and "action" in err
    code, _, err = run(capsys, "admin", "create_key", "user=erin", "scopes=read", "scopes=delete")
    assert code == 2 and "scopes" in err and "twice" in err
    assert admin_json(capsys, "list_keys", "user=erin")[1]["keys"] == []
    code, answer, _ = admin_json(capsys, "create_key", "user=erin", "scopes=read")
    assert code == 0 and answer["scopes"] == ["read"]


DOCS = Path(__file__).resolve().parents[2] / "docs" / "clients.md"


def documented_admin_json_commands() -> list[str]:
    """Every `sessionvault admin '{...}'` command docs/clients.md shows, as written."""
    import re

    return re.findall(r"^\s*(sessionvault admin '\{.*\}'.*)$", DOCS.read_text(), re.MULTILINE)


class FakeLambda:
    """boto3's Lambda client for `--function-name`: the real admin action, run locally."""

    def __init__(self):
        self.invoked = []

    def invoke(self, FunctionName, Payload):
        import io

        from sessionvault.jobs import admin
        from sessionvault.local.host import target

        event = json.loads(Payload)
        self.invoked.append((FunctionName, event))
        with target.admin_runtime(target.current()) as rt:
            answer = admin.dispatch(rt, event, "fake-request-id")
        return {"Payload": io.BytesIO(json.dumps(answer).encode())}


def test_the_admin_json_form_in_docs_clients_runs_as_written(local, capsys, monkeypatch):
    import shlex

    import boto3

    fake = FakeLambda()
    monkeypatch.setattr(boto3, "client", lambda service, **kw: fake)
    commands = documented_admin_json_commands()
    assert commands, "docs/clients.md shows the admin function's JSON form"
    assert run(capsys, "user", "create", "alice")[0] == 0
    for command in commands:
        argv = shlex.split(command.replace("<stack>", "sessionvault"))
        assert argv[:2] == ["sessionvault", "admin"]
        code, out, err = run(capsys, *argv[1:])
        assert code == 0, err
        answer = json.loads(out)
        assert answer["ok"] is True and answer["key"].startswith("sv_live_")
        assert answer["scopes"] == ["read", "write"]
        name, event = fake.invoked[-1]
        assert name == "sessionvault-admin" and event["action"] == "create_key"
    listed = admin_json(capsys, "list_keys", "user=alice")[1]["keys"]
    assert [(k["label"], k["scopes"]) for k in listed] == [("claude-ai", ["read", "write"])] * len(commands)
    # Locally the JSON form is the same event; it must be one object naming an action.
    code, answer, _ = admin_json(capsys, '{"action": "list_keys", "user": "alice"}')
    assert code == 0 and len(answer["keys"]) == len(commands)
    for bad in ('{"action": "list_keys"', '{"action": ["list_keys"]}', '{"user": "alice"}'):
        assert run(capsys, "admin", bad)[0] == 2
    assert run(capsys, "admin", '{"action": "list_keys"}', "user=alice")[0] == 2


def test_a_disabled_users_keys_are_listed_as_disabled_until_enabled(local, capsys):
    assert run(capsys, "user", "create", "frank")[0] == 0
    key = run(capsys, "key", "create", "--user", "frank", "--label", "desk")[1].strip()
    assert run(capsys, "user", "disable", "frank") == (0, "disabled\n", "")
    row = run(capsys, "key", "list", "--user", "frank")[1]
    assert row.splitlines()[0].split() == ["KEY", "STATE", "USER", "SCOPES", "LAST", "USED", "LABEL"]
    assert key[:12] in row and "disabled" in row and "active" not in row
    listed = admin_json(capsys, "list_keys", "user=frank")[1]["keys"]
    assert [(k["prefix"], k["state"]) for k in listed] == [(key[:12], "disabled")]
    users = {u["name"]: u for u in admin_json(capsys, "list_users")[1]["users"]}
    assert users["frank"]["state"] == "disabled" and users["frank"]["keys"] == 1
    table = run(capsys, "user", "list")[1]
    assert table.splitlines()[0].split() == ["USER", "STATE", "ID", "KEYS", "CREATED"]  # a header row
    frank = next(line for line in table.splitlines() if line.startswith("frank "))
    assert "disabled" in frank and users["frank"]["id"] in frank
    assert run(capsys, "user", "enable", "frank") == (0, "enabled\n", "")
    assert "active" in run(capsys, "key", "list", "--user", "frank")[1]
    assert admin_json(capsys, "list_keys", "user=frank")[1]["keys"][0]["state"] == "active"
    assert "active" in next(x for x in run(capsys, "user", "list")[1].splitlines() if x.startswith("frank "))
    run(capsys, "key", "revoke", key[:12])
    run(capsys, "user", "disable", "frank")
    assert admin_json(capsys, "list_keys", "user=frank")[1]["keys"][0]["state"] == "revoked"  # the key's own
    assert run(capsys, "user", "enable", "nobody-here")[0] == 2


class Terminal:
    """stdin as a person at a terminal would give it."""

    def __init__(self, typed: str):
        self.typed = typed
        self.prompted = False

    def isatty(self):
        return True

    def readline(self):
        self.prompted = True
        return self.typed


class Pipe(Terminal):
    def isatty(self):
        return False


def user_exists(capsys, name: str) -> bool:
    return name in {u["name"] for u in admin_json(capsys, "list_users")[1]["users"]}


def test_user_delete_asks_for_the_name_on_a_terminal_and_needs_yes_otherwise(local, capsys, monkeypatch):
    for name in ("gina", "hank"):
        assert run(capsys, "user", "create", name)[0] == 0
    user_id = next(u["id"] for u in admin_json(capsys, "list_users")[1]["users"] if u["name"] == "gina")
    piped = Pipe("gina\n")
    monkeypatch.setattr("sys.stdin", piped)
    code, out, err = run(capsys, "user", "delete", "gina")
    assert code == 2 and "--yes" in err and out == "" and not piped.prompted
    assert user_exists(capsys, "gina")
    for typed in ("", "gin\n", "GINA\n", f"{user_id}\n"):  # only the name itself confirms
        monkeypatch.setattr("sys.stdin", Terminal(typed))
        code, out, err = run(capsys, "user", "delete", user_id)
        assert code == 1 and "gina" in err and "not deleted" in err and out == ""
        assert user_exists(capsys, "gina")
    terminal = Terminal("gina\n")
    monkeypatch.setattr("sys.stdin", terminal)
    code, out, err = run(capsys, "user", "delete", user_id)  # by id: the prompt names the user
    assert code == 0 and "deleted" in out and terminal.prompted and "type the user's name" in err
    assert not user_exists(capsys, "gina")
    monkeypatch.setattr("sys.stdin", Pipe(""))
    assert run(capsys, "user", "delete", "hank", "--yes")[0] == 0
    assert not user_exists(capsys, "hank")
    assert run(capsys, "user", "delete", "hank", "--yes")[0] == 2  # no such user: a clear error


def test_connect_hooks_gives_the_hooks_a_key_of_their_own(local, capsys, monkeypatch, tmp_path):
    """Issue 35 item 1: checkpoints need the `checkpoint` scope, which no model-facing key has.
    `connect --hooks` on this machine's server makes the hooks a key (read, checkpoint) for the
    person whose key it connects with, in the state folder, once; for a server whose keys it
    cannot make, it says the exact command, and --hook-key saves the key that printed."""
    from sessionvault.local.hook import hook_key

    monkeypatch.setenv("HOME", str(tmp_path))
    run(capsys, "user", "create", "dora")
    model_key = run(capsys, "key", "create", "--user", "dora")[1].strip()
    monkeypatch.setenv("SESSIONVAULT_API_KEY", model_key)
    url = "http://127.0.0.1:8765/mcp"
    code, _, err = run(capsys, "connect", "claude-code", "--hooks", "--url", url)
    assert code == 0 and "made the hooks a key of their own" in err, err
    made = hook_key.saved(local, url)
    assert made.startswith("sv_live_") and made != model_key
    assert oct((local / hook_key.FILE).stat().st_mode & 0o777) == "0o600"
    listing = run(capsys, "key", "list", "--user", "dora")[1]
    assert any(
        made[:12] in line and "read,checkpoint" in line and "hooks" in line for line in listing.splitlines()
    )
    code, _, err = run(capsys, "connect", "claude-code", "--hooks", "--url", url)
    assert code == 0 and "use the key saved" in err and hook_key.saved(local, url) == made  # once
    remote = "https://sv.example.com/mcp"
    code, _, err = run(capsys, "connect", "claude-code", "--hooks", "--url", remote)
    assert (
        code == 0
        and "scopes=read,checkpoint" in err
        and "--hook-key" in err
        and not hook_key.saved(local, remote)
    )
    given = "sv_live_" + "g" * 32
    code, _, err = run(capsys, "connect", "claude-code", "--hooks", "--url", remote, "--hook-key", given)
    assert code == 0 and hook_key.saved(local, remote) == given


def test_dev_gives_the_local_hooks_their_key_once(local):
    """`sessionvault dev` (make dev) makes the local user's hooks key when there is none, so hooks
    installed before the checkpoint scope go on saving checkpoints after an upgrade."""
    from sessionvault.local import config
    from sessionvault.local.hook import hook_key
    from sessionvault.local.host import target

    url = "http://127.0.0.1:9876/mcp"
    t = target.embedded_target(config.load())
    with target.admin_runtime(t) as rt:
        target.ensure_user(rt, "local", "make dev")
        first = target.ensure_hook_key(rt, "local", local, url)
        again = target.ensure_hook_key(rt, "local", local, url)
    assert first == local / hook_key.FILE and again is None
    assert hook_key.saved(local, url).startswith("sv_live_")
