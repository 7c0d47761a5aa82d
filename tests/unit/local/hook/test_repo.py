"""current_repo() against real temporary git repositories."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sessionvault.local.hook import repo
from sessionvault.local.hook.repo import current_repo

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
        ("git@github.com:Owner/Name.git", "github.com/owner/name"),
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


def test_a_linked_worktree_without_a_remote_is_named_for_its_main_checkout(tmp_path: Path) -> None:
    main = _git_repo(tmp_path / "widget")
    _commit_files(main, {"a.txt": "a"})
    subprocess.run(
        ["git", "-C", str(main), "worktree", "add", "-q", str(tmp_path / "widget-fix")], check=True
    )
    assert current_repo(tmp_path / "widget-fix") == current_repo(main) == "widget"


def test_a_linked_worktree_with_a_remote_shares_its_identity(tmp_path: Path) -> None:
    main = _git_repo(tmp_path / "widget", "git@github.com:Acme/Widget.git")
    _commit_files(main, {"a.txt": "a"})
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(tmp_path / "wt")], check=True)
    assert current_repo(tmp_path / "wt") == "github.com/acme/widget"


def test_a_submodule_is_a_repository_of_its_own(tmp_path: Path) -> None:
    lib = _git_repo(tmp_path / "lib")
    _commit_files(lib, {"lib.txt": "lib"})
    app = _git_repo(tmp_path / "app")
    _commit_files(app, {"app.txt": "app"})
    subprocess.run(
        [
            "git",
            "-C",
            str(app),
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            str(lib),
            "vendor/lib",
        ],
        check=True,
    )
    assert current_repo(app / "vendor" / "lib") == "lib"  # its origin is a local path: its folder
    assert current_repo(app) == "app"


# --- Branch, commit and drift -------------------------------------------------------------


def _commit_files(path: Path, files: dict[str, str], message: str = "work") -> str:
    """Write `files` in the checkout at `path`, commit them, and return the new HEAD."""
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
    who = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "-C", str(path), *who, "commit", "-q", "-m", message], check=True)
    head = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    )
    return head.stdout.strip()


def test_current_branch_and_commit(tmp_path: Path) -> None:
    checkout = _git_repo(tmp_path / "c")
    assert repo.current_branch(checkout) is None and repo.current_commit(checkout) is None  # no commit yet
    subprocess.run(["git", "-C", str(checkout), "checkout", "-q", "-b", "feature/x"], check=True)
    head = _commit_files(checkout, {"a.txt": "a"})
    assert repo.current_branch(checkout) == "feature/x"
    assert repo.current_commit(checkout) == head and len(head) == 40
    subprocess.run(["git", "-C", str(checkout), "checkout", "-q", "--detach"], check=True)
    assert repo.current_branch(checkout) == "HEAD"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repo.current_branch(plain) is None and repo.current_commit(plain) is None


def test_drift_counts_commits_and_changed_files_since_a_commit(tmp_path: Path) -> None:
    checkout = _git_repo(tmp_path / "d")
    subprocess.run(["git", "-C", str(checkout), "checkout", "-q", "-b", "main"], check=True)
    saved = _commit_files(checkout, {"keep.py": "1", "src/old.py": "1", "notes.md": "1"})
    assert repo.drift_since(saved, checkout) == repo.Drift(saved, saved, "main", True, 0, 0, ())
    # Not as save_session stores it (lower-case hex): the whole hash in capitals, which holds a
    # letter (a 7-character prefix is all digits in ~4 % of commits, and then stays the same).
    assert repo.drift_since(saved.upper(), checkout) is None

    _commit_files(checkout, {"src/old.py": "2", "src/new.py": "1"}, "one")
    head = _commit_files(checkout, {"notes.md": "2"}, "two")
    (checkout / "keep.py").write_text("uncommitted")  # counts: the working tree moved too
    (checkout / "untracked.txt").write_text("x")  # does not: git diff sees tracked files only
    drift = repo.drift_since(saved, checkout)
    assert drift is not None
    assert (drift.head, drift.branch, drift.known, drift.commits) == (head, "main", True, 2)
    assert drift.changed == 4
    assert sorted(drift.files) == ["keep.py", "notes.md", "src/new.py", "src/old.py"]
    assert repo.drift_since(saved[:9], checkout) == repo.Drift(
        saved[:9], head, "main", True, 2, 4, drift.files
    )


def test_what_git_reports_is_tested_even_when_git_is_slower_than_the_hooks_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loaded machine, played by a git that takes longer than the hook's 2 s per call: the
    drift test failed on one (git timed out, drift came back unknown). The deadline a test of
    git's answers runs under is the test's (conftest.py raises GIT_TIMEOUT_S), never the
    machine's speed."""
    assert repo.GIT_TIMEOUT_S > 2.0  # this folder's conftest: the test controls the deadline
    checkout = _git_repo(tmp_path / "slow")
    saved = _commit_files(checkout, {"a.py": "1"})
    _commit_files(checkout, {"a.py": "2"})
    real = shutil.which("git")
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nsleep 2.2\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    drift = repo.drift_since(saved, checkout)
    assert drift is not None and (drift.known, drift.commits, drift.files) == (True, 1, ("a.py",))


def test_drift_names_a_few_files_and_counts_the_rest(tmp_path: Path) -> None:
    checkout = _git_repo(tmp_path / "many")
    saved = _commit_files(checkout, {"start": "0"})
    _commit_files(checkout, {f"f{i:02}.txt": str(i) for i in range(12)})
    drift = repo.drift_since(saved, checkout)
    assert drift is not None and drift.changed == 12 and len(drift.files) == repo.DRIFT_NAMES


def test_drift_from_an_unknown_commit_says_so(tmp_path: Path) -> None:
    checkout = _git_repo(tmp_path / "u")
    head = _commit_files(checkout, {"a": "1"})
    unknown = "0123456789abcdef0123456789abcdef01234567"
    drift = repo.drift_since(unknown, checkout)
    assert drift is not None and drift.known is False and drift.head == head
    assert (drift.commits, drift.changed, drift.files) == (0, 0, ())


@pytest.mark.parametrize("commit", ["", "--output=/tmp/x", "HEAD", "abc", "g" * 40, "a" * 41])
def test_drift_never_hands_git_anything_but_a_commit_id(tmp_path: Path, commit: str) -> None:
    checkout = _git_repo(tmp_path / "o")
    _commit_files(checkout, {"a": "1"})
    assert repo.drift_since(commit, checkout) is None


def test_drift_outside_git_or_without_git_never_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repo.drift_since("a" * 40, plain) == repo.Drift("a" * 40, None, None)
    checkout = _git_repo(tmp_path / "g")
    _commit_files(checkout, {"a": "1"})
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert repo.drift_since("a" * 40, checkout) == repo.Drift("a" * 40, None, None)
