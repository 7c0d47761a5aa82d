"""current_repo() against real temporary git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sessionvault.local import repo
from sessionvault.local.repo import current_repo, normalize_remote

pytestmark = pytest.mark.usefixtures("isolated_git")


def _git_repo(path: Path, origin: str | None = None) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if origin is not None:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", origin], check=True)
    return path


@pytest.mark.parametrize(
    ("origin", "expected"),
    [
        ("git@github.com:Owner/Name.git", "github.com/Owner/Name"),
        ("https://GitHub.com/owner/name.git", "github.com/owner/name"),
        ("https://github.com/owner/name/", "github.com/owner/name"),
        (
            "https://user:s3cret@gitlab.example.com/group/sub/name",
            "gitlab.example.com/group/sub/name",
        ),
        ("ssh://git@Bitbucket.org:7999/owner/name.git", "bitbucket.org/owner/name"),
        ("git://host.xz/owner/name.git", "host.xz/owner/name"),
    ],
)
def test_origin_is_normalized_to_host_owner_name(tmp_path: Path, origin: str, expected: str) -> None:
    checkout = _git_repo(tmp_path / "checkout", origin)
    assert current_repo(checkout) == expected


def test_https_and_ssh_clones_of_one_repo_get_one_name(tmp_path: Path) -> None:
    a = _git_repo(tmp_path / "a", "git@github.com:acme/vault.git")
    b = _git_repo(tmp_path / "b", "https://github.com/acme/vault")
    assert current_repo(a) == current_repo(b) == "github.com/acme/vault"


def test_without_origin_uses_top_level_folder_even_from_a_subfolder(tmp_path: Path) -> None:
    top = _git_repo(tmp_path / "my-project")
    sub = top / "src" / "pkg"
    sub.mkdir(parents=True)
    assert current_repo(sub) == "my-project"


def test_local_path_origin_falls_back_to_top_level_folder(tmp_path: Path) -> None:
    checkout = _git_repo(tmp_path / "clone", str(tmp_path / "upstream.git"))
    assert current_repo(checkout) == "clone"


def test_outside_git_uses_the_folder_name(tmp_path: Path) -> None:
    plain = tmp_path / "just-a-folder"
    plain.mkdir()
    assert current_repo(plain) == "just-a-folder"


def test_defaults_to_process_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = _git_repo(tmp_path / "here", "git@github.com:me/here.git")
    monkeypatch.chdir(checkout)
    assert current_repo() == "github.com/me/here"


def test_missing_git_binary_falls_back_without_raising(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = _git_repo(tmp_path / "nogit", "git@github.com:me/nogit.git")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert current_repo(checkout) == "nogit"


def test_git_timeout_falls_back_without_raising(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = _git_repo(tmp_path / "slow", "git@github.com:me/slow.git")

    def hang(*args: object, **kwargs: object) -> None:
        raise subprocess.TimeoutExpired(cmd="git", timeout=2)

    monkeypatch.setattr(repo.subprocess, "run", hang)
    assert current_repo(checkout) == "slow"


@pytest.mark.parametrize("url", ["/srv/git/x.git", "file:///srv/git/x.git", "", "host:"])
def test_normalize_remote_rejects_urls_without_host_or_path(url: str) -> None:
    assert normalize_remote(url) is None
