"""`sessionvault deploy` end to end with fake `aws` and `sam` on PATH: the real CLI, the real
admin action behind the fake `aws lambda invoke` (so the key is real), and the real server as
the "deployed" URL, so that `doctor` and `connect` afterwards are checked against it."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

import pytest

from sessionvault import names
from sessionvault.cli import main as cli

from ..conftest import MASTER_KEY
from ..support import fake_cloud

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cloud(tmp_path, monkeypatch, pg, server, isolated_git):
    """A fake AWS account whose stack "serves" at the test server; returns the argv log."""
    bin_ = tmp_path / "bin"
    log = fake_cloud.install(bin_)
    monkeypatch.chdir(fake_cloud.repo_root(tmp_path / "repo", ROOT / "template.yaml"))
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", names.KEY_ENV, names.URL_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in {
        "PATH": os.pathsep.join([str(bin_), os.environ["PATH"]]),
        "FAKE_LOG": str(log),
        "FAKE_REGION": "eu-west-1",
        "FAKE_MCP_URL": server.url,
        "FAKE_ADMIN_URL": pg.admin_url,
        "FAKE_MASTER_KEY": MASTER_KEY,
        "PYENV_ROOT": str(tmp_path / "no-pyenv"),
        names.HOME_ENV: str(tmp_path / "state"),
        "HOME": str(tmp_path / "home"),
    }.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return log


def sv(capfd, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capfd.readouterr()
    return code, out.out, out.err


def steps(log: Path) -> list[str]:
    """Each call as `tool subcommand`, in the order they ran."""
    return [" ".join(call[:3] if call[0] == "aws" else call[:2]) for call in fake_cloud.calls(log)]


def test_a_first_deploy_is_guided_makes_a_key_and_saves_it_0600_without_ever_showing_it(
    cloud, capfd, tmp_path, server
):
    user = f"deployer-{os.urandom(4).hex()}"
    code, out, err = sv(capfd, "deploy", "--owner-secret", "sessionvault/owner", "--user", user)
    assert code == 0, err
    assert steps(cloud) == [
        "aws sts get-caller-identity",
        "aws configure get",
        "sam --version",
        "python3.12 --version",
        "sam build",
        "sam deploy",
        "aws cloudformation describe-stacks",
        "aws lambda invoke",
        "aws lambda invoke",
    ]
    sam_deploy = fake_cloud.calls(cloud)[5]
    assert "--guided" in sam_deploy and "OwnerSecret=sessionvault/owner" in sam_deploy
    assert sam_deploy[sam_deploy.index("--region") + 1] == "eu-west-1"  # the AWS CLI's region

    state = tmp_path / "state"
    key_file = state / "deployment.key"
    key = key_file.read_text().strip()
    assert key.startswith("sv_live_")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key not in cloud.read_text()  # never on a command line
    assert key not in out and key not in err
    assert not any((tmp_path / "tmp").iterdir())  # the request and the answer are gone
    saved = json.loads((state / "deployment.json").read_text())
    assert saved == {
        "url": server.url,
        "stack": "sessionvault",
        "region": "eu-west-1",
        "admin_function": "sessionvault-admin",
        "user": user,
    }
    assert "Connect your AI clients:" in out and server.url in out  # make dev's block, for this URL


def test_a_second_deploy_uses_the_saved_config_and_keeps_the_key_unless_asked(cloud, capfd, tmp_path):
    user = f"deployer-{os.urandom(4).hex()}"
    assert sv(capfd, "deploy", "--owner-secret", "x", "--stack-name", "sv-test", "--user", user)[0] == 0
    key = (tmp_path / "state" / "deployment.key").read_text()
    cloud.write_text("")

    code, _out, err = sv(capfd, "deploy", "--user", user)
    assert code == 0, err
    deploy_call = next(c for c in fake_cloud.calls(cloud) if c[:2] == ["sam", "deploy"])
    assert "--guided" not in deploy_call and "--parameter-overrides" not in deploy_call
    assert deploy_call[deploy_call.index("--stack-name") + 1] == "sv-test"  # from samconfig.toml
    assert "aws lambda invoke" not in steps(cloud)  # same stack, same user: the saved key stays
    assert (tmp_path / "state" / "deployment.key").read_text() == key

    cloud.write_text("")
    code, _out, err = sv(capfd, "deploy", "--user", user, "--new-key")
    assert code == 0, err
    # create_user (answered: it already exists), then create_key: a new key for the same user
    assert steps(cloud).count("aws lambda invoke") == 2
    assert (tmp_path / "state" / "deployment.key").read_text() != key


def test_after_a_deploy_doctor_and_connect_default_to_the_deployed_url_and_key(
    cloud, capfd, tmp_path, server
):
    assert sv(capfd, "deploy", "--owner-secret", "x", "--user", f"u-{os.urandom(4).hex()}")[0] == 0
    key_file = tmp_path / "state" / "deployment.key"

    _, out, _ = sv(capfd, "doctor")
    assert f"SessionVault doctor: {server.url}" in out
    assert "✓ the server accepts the key" in out
    assert f"API key from {key_file}" in out

    code, out, err = sv(capfd, "connect", "cursor", "--apply")
    assert code == 0, err
    config = json.loads((tmp_path / "home" / ".cursor" / "mcp.json").read_text())
    assert config["mcpServers"]["sessionvault"]["url"] == server.url
    assert f'export {names.KEY_ENV}="$(cat {key_file})"' in err


def test_an_explicit_url_wins_and_never_gets_the_deployed_key(cloud, capfd, monkeypatch, tmp_path):
    assert sv(capfd, "deploy", "--owner-secret", "x", "--user", f"u-{os.urandom(4).hex()}")[0] == 0
    shown = (tmp_path / "state" / "deployment.key").read_text().strip()[:12]  # what doctor prints of a key
    other = "http://127.0.0.1:9/mcp"
    monkeypatch.setenv(names.URL_ENV, other)
    _, out, _ = sv(capfd, "doctor")
    assert f"SessionVault doctor: {other}" in out
    assert f"✗ {names.KEY_ENV} is not set" in out  # the deployed key is for the deployed URL only
    monkeypatch.delenv(names.URL_ENV)
    _, out, _ = sv(capfd, "doctor", "--url", other)
    assert f"SessionVault doctor: {other}" in out
    assert f"✗ {names.KEY_ENV} is not set" in out and "API key from" not in out and shown not in out


def test_a_failing_sam_deploy_stops_with_the_command_its_exit_code_and_its_last_errors(
    cloud, capfd, monkeypatch, tmp_path
):
    monkeypatch.setenv("FAKE_SAM_FAIL", "1")
    code, _out, err = sv(capfd, "deploy", "--owner-secret", "x")
    assert code == 2
    message = err[err.index("sessionvault: ") :]
    assert "sam deploy --guided" in message and "failed with exit code 1" in message
    assert "Error: Failed to create changeset" in message
    assert "progress line 29" in message and "progress line 0\n" not in message  # the tail only
    assert steps(cloud)[-1] == "sam deploy"  # nothing after the failed step
    assert not (tmp_path / "state").exists()


def test_a_crashing_admin_function_stops_with_its_error_and_where_its_log_is(cloud, capfd, monkeypatch):
    monkeypatch.delenv("FAKE_ADMIN_URL")
    monkeypatch.setenv("FAKE_FUNCTION_ERROR", "1")
    code, _, err = sv(capfd, "deploy", "--owner-secret", "x")
    assert code == 2
    assert "the admin function failed (Exception: boom)" in err
    assert "aws logs tail /aws/lambda/sessionvault-admin" in err
