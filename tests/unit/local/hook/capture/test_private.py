"""What a capture never takes (private.py): `<private>` spans, and the contents of private
files, by the default patterns and by a repo's own `.sessionvaultignore`."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionvault.local.hook.capture import private
from sessionvault.local.hook.capture.private import DEFAULT_PRIVATE, WITHHELD, matcher, names_private

DEFAULT = matcher(DEFAULT_PRIVATE)


@pytest.mark.parametrize(
    "path",
    [".env", ".env.production", "app/.env.local", "~/.ssh/id_ed25519", "certs/server.pem", "tls.key",
     "/home/me/.npmrc", ".netrc", "~/.pgpass", "kubeconfig", "ci.kubeconfig", "~/.kube/config", "'.env'"],
)  # fmt: skip
def test_the_default_patterns_name_secrets_files(path: str) -> None:
    assert DEFAULT(path)


@pytest.mark.parametrize(
    "path", ["src/env.py", "environment.md", "keys.py", "id_token.py", "config", "https://x.example/.env"]
)
def test_ordinary_files_are_not_private(path: str) -> None:
    assert not DEFAULT(path)


def test_a_command_names_the_private_file_it_reads() -> None:
    assert names_private("set -a && source .env && psql -h db", DEFAULT) == ".env"
    assert names_private("cat ~/.kube/config | grep token", DEFAULT) == "~/.kube/config"
    assert names_private("pytest tests/unit -q", DEFAULT) == ""


def test_spans_are_removed_and_an_unclosed_one_runs_to_the_end() -> None:
    assert private.without_spans("a <private>b</private> c <Private>d\ne") == "a [private] c [private]"
    assert private.without_spans("nothing to hide") == "nothing to hide"


def test_a_repos_own_file_adds_patterns_and_never_removes_the_defaults(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / private.REPO_FILE).write_text("# ours\nsecrets/*.json\n/prod.tfvars\n\n")
    (tmp_path / "svc").mkdir()
    patterns = private.patterns_for(str(tmp_path / "svc"))
    assert patterns[: len(DEFAULT_PRIVATE)] == DEFAULT_PRIVATE
    is_private = matcher(patterns)
    assert is_private("secrets/prod.json") and is_private("prod.tfvars") and is_private(".env")
    assert not is_private("src/secrets.py")


def test_the_search_for_a_repos_file_stops_at_the_checkout(tmp_path: Path) -> None:
    (tmp_path / private.REPO_FILE).write_text("*.md\n")  # above the checkout: not the repo's
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    assert private.patterns_for(str(tmp_path / "repo")) == DEFAULT_PRIVATE


def test_a_code_block_a_reply_introduces_with_a_private_files_name_is_withheld() -> None:
    reply = (
        "Here is your `.env`:\n```\nDB_PASSWORD=x\nSECRET_KEY=y\n```\nand `app.py`:\n```python\nprint(1)\n```"
    )
    assert private.withhold(reply, set(), DEFAULT) == (
        "Here is your `.env`:\n```\n" + WITHHELD + "\n```\nand `app.py`:\n```python\nprint(1)\n```"
    )


def test_lines_a_private_file_printed_are_withheld_wherever_they_reappear() -> None:
    withheld = private.lines_of("DB_HOST=db.internal\nshort\n")
    assert private.withhold("the file says\n  DB_HOST=db.internal\nok", withheld, DEFAULT) == (
        f"the file says\n{WITHHELD}\nok"
    )
