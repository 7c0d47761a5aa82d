"""One rule for "this repo", shared by every client.

Sessions are filed under a repo name, so Claude Code, Cursor, Codex and the rest must all
derive the same name from the same checkout. The rule: the `origin` remote normalized to
`host/owner/name`, else the name of the git top-level folder, else the folder name of cwd.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

# Reading local git metadata is fast; a hung git (network filesystem, credential helper)
# must not stall a hook or a tool call.
_GIT_TIMEOUT_S = 2.0

# scp-like syntax `[user@]host:path`; a `/` before the `:` would make it a local path.
_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.+)$")


def current_repo(cwd: Path | None = None) -> str:
    """Name of the repo that `cwd` (default: the process cwd) belongs to. Never raises."""
    where = Path.cwd() if cwd is None else cwd
    remote = _git(where, "remote", "get-url", "origin")
    if remote:
        normalized = normalize_remote(remote)
        if normalized:
            return normalized
    top = _git(where, "rev-parse", "--show-toplevel")
    if top:
        return Path(top).name
    return where.absolute().name


def normalize_remote(url: str) -> str | None:
    """`git@github.com:Owner/Name.git` -> `github.com/Owner/Name`; None for local paths.

    Only the host is lower-cased: it is case-insensitive, while owner and name may not be
    on every forge. User info, port and `.git` are dropped so the https and ssh clones of
    one repo get one name.
    """
    url = url.strip()
    if "://" in url:
        parts = urlsplit(url)
        host, path = parts.hostname or "", parts.path
    else:
        match = _SCP_LIKE.match(url)
        if not match:
            return None
        host, path = match["host"].lower(), match["path"]
    path = path.strip("/")
    path = path.removesuffix(".git").strip("/")
    if not host or not path:
        return None
    return f"{host}/{path}"


def _git(where: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(where), *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no git, cwd gone, or timeout: fall back to folder names
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None
