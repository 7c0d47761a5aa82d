"""One rule for "this repo", shared by every client, and where the checkout stands in git.

Sessions are filed under a repo name, so Claude Code, Cursor, Codex and the rest must all
derive the same name from the same checkout. The rule: the `origin` remote normalized to
`host/owner/name`, else the name of the git top-level folder, else the folder name of cwd.

A session also records the branch and commit it was saved at (`current_branch`,
`current_commit`); `drift_since` says how far the checkout moved from such a commit, for the
session-start hook. Every function here runs git with a timeout and never raises.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sessionvault.core.repos import remote_identity

# Reading local git metadata is fast; a hung git (network filesystem, credential helper)
# must not stall a hook or a tool call. Read at each call, so that a test can raise it: a test
# of what git reports must not depend on a loaded machine meeting this deadline (it did not:
# drift came back empty and the test failed), only a test of the deadline itself may.
GIT_TIMEOUT_S = 2.0


def current_repo(cwd: Path | None = None) -> str:
    """Name of the repo that `cwd` (default: the process cwd) belongs to. Never raises.

    The `origin` remote in the server's canonical form (core.repos), else the main checkout's
    folder name: a linked worktree (`git worktree add ../app-fix`) is the same repository as
    its main checkout, so it files under the same name. A submodule is a repository of its own
    (its own remote, else its own folder)."""
    where = Path.cwd() if cwd is None else cwd
    remote = _git(where, "remote", "get-url", "origin")
    if remote:
        normalized = remote_identity(remote)
        if normalized:
            return normalized
    out = _git(where, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
    parts = out.split("\n") if out else []
    if len(parts) == 2:
        top, common = Path(parts[0]), Path(parts[1])
        return common.parent.name if common.name == ".git" else top.name
    return where.absolute().name


def _head(where: Path) -> tuple[str | None, str | None]:
    """(full commit id of HEAD, its branch name or "HEAD" when detached) in one git call;
    (None, None) outside git or before the first commit."""
    out = _git(where, "rev-parse", "HEAD", "--abbrev-ref", "HEAD")
    parts = out.split("\n") if out else []
    if len(parts) != 2 or not _COMMIT.match(parts[0]):
        return None, None
    return parts[0], parts[1]


def current_branch(cwd: Path | None = None) -> str | None:
    """The branch checked out at `cwd`, "HEAD" when detached, None outside git. Never raises.
    What save_session's `branch` means (`git rev-parse --abbrev-ref HEAD`)."""
    return _head(Path.cwd() if cwd is None else cwd)[1]


def current_commit(cwd: Path | None = None) -> str | None:
    """The full commit id of HEAD at `cwd`, None outside git or before the first commit. Never
    raises. What save_session's `commit` means (`git rev-parse HEAD`)."""
    return _head(Path.cwd() if cwd is None else cwd)[0]


# A commit id as save_session accepts it (records.Commit stores it lower-cased). Anything else is
# never handed to git: a saved "--output=x" must not become an option.
_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
DRIFT_NAMES = 5  # changed files named in a drift report; the rest are counted


@dataclass(frozen=True)
class Drift:
    """How far the checkout at `cwd` moved from a saved commit.

    `head` is None outside git (then nothing else is known). `known` is False when the saved
    commit is not in this clone (not fetched, or history rewritten): `commits` and `files` are
    then unknown. `files` names at most DRIFT_NAMES of the `changed` files (committed or not,
    tracked files only) since the saved commit."""

    commit: str
    head: str | None
    branch: str | None
    known: bool = False
    commits: int = 0
    changed: int = 0
    files: tuple[str, ...] = ()


def is_commit(value: object) -> bool:
    return isinstance(value, str) and bool(_COMMIT.match(value))


def drift_since(commit: str, cwd: Path | None = None) -> Drift | None:
    """Commits since `commit` (`git rev-list --count <commit>..HEAD`), files changed since
    (`git diff --name-only <commit>`: committed and uncommitted) and the current branch, in at
    most three git calls (two when HEAD is still at `commit`). None if `commit` is not a commit
    id. Never raises."""
    if not is_commit(commit):
        return None
    where = Path.cwd() if cwd is None else cwd
    head, branch = _head(where)
    if head is None:
        return Drift(commit, None, None)
    if head.startswith(commit):
        commits = 0
    else:
        count = _git(where, "rev-list", "--count", f"{commit}..HEAD", "--")
        if count is None or not count.isdigit():
            return Drift(commit, head, branch)  # unknown here, or ambiguous
        commits = int(count)
    # -z: names unquoted and NUL-separated; empty output (no changes) comes back as None.
    names = [n for n in (_git(where, "diff", "--name-only", "-z", commit, "--") or "").split("\0") if n]
    return Drift(commit, head, branch, True, commits, len(names), tuple(names[:DRIFT_NAMES]))


def _git(where: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(where), *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no git, cwd gone, or timeout: fall back to folder names
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None
