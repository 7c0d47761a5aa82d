"""A repo's one identity, decided in one place for the server and the laptop alike.

Sessions are filed under a repo, so every spelling of one repository must give one name, or a
handoff saved by one client is silently missed by the next: `git@github.com:Acme/App.git`,
`https://github.com/acme/app`, `ssh://git@github.com:22/acme/app` are all `github.com/acme/app`.
The rule: a remote URL (ssh, scp-like, https, git://, with or without user, port, `.git`,
trailing slash, query or fragment) becomes `host/path` in lower case; a local path becomes its
last folder name (what the laptop side names a repo without a remote); anything else, a bare
folder name, stays as it is. Credentials in a URL never survive: they are part of what is dropped.

Lower case throughout, although a few forges treat owner or name as case-sensitive: no two
repositories of one person differ only by case, and a missed handoff is worse than that edge.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# scp-like syntax `[user@]host:path`; a `/` before the `:` would make it a local path, and a
# one-letter host is a Windows drive (`C:\src\app`), as git itself reads it.
_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[^:/\s@]{2,}):(?P<path>[^\s]*)$")
# `github.com/acme/app` as typed, or as a model copies it from a listing: a dotted host name,
# then a path. `acme/app` (no dot) is not taken for one: it stays a name.
_HOST_PATH = re.compile(r"^(?P<host>[a-z0-9-]+(?:\.[a-z0-9-]+)+)/(?P<path>.+)$", re.IGNORECASE)
_URL_SCHEMES = frozenset({"ssh", "git", "http", "https", "git+ssh", "ssh+git", "git+https", "git+http"})


def canonical_repo(value: str) -> str:
    """The one name of the repo `value` spells; "" stays "" (no repo given)."""
    value = value.strip()
    remote = remote_identity(value)
    if remote is not None:
        return remote
    if value.startswith(("/", "~", "file://")) or re.match(r"^[A-Za-z]:[\\/]", value):
        return _folder_name(value)
    return value.rstrip("/\\")


def remote_identity(url: str) -> str | None:
    """`host/path` in lower case for a remote URL in any of git's forms; None for anything
    that is not one (a local path, a bare name)."""
    url = url.strip()
    if "://" in url:
        try:
            parts = urlsplit(url)
        except ValueError:  # an unclosed "[" of an IPv6 host
            return None
        if parts.scheme.lower() not in _URL_SCHEMES:
            return None
        host, path = parts.hostname or "", parts.path
    elif (match := _SCP_LIKE.match(url)) or (match := _HOST_PATH.match(url)):
        host, path = match["host"], match["path"]
    else:
        return None
    path = _trim(path)
    if not host or not path:
        return None
    return _forge_quirks(host.lower(), path.lower())


def _trim(path: str) -> str:
    path = path.strip("/")
    while path.endswith(".git") or path.endswith("/"):
        path = path.removesuffix(".git").rstrip("/")
    return re.sub(r"/{2,}", "/", path)


def _forge_quirks(host: str, path: str) -> str:
    """Forges whose ssh and https remotes differ in more than the scheme. Azure DevOps:
    `git@ssh.dev.azure.com:v3/org/project/repo` and `https://dev.azure.com/org/project/_git/repo`."""
    if host == "ssh.dev.azure.com" and path.startswith("v3/"):
        host, path = "dev.azure.com", path.removeprefix("v3/")
    if host == "dev.azure.com" or host.endswith(".visualstudio.com"):
        path = path.replace("/_git/", "/")
    return f"{host}/{path}"


def _folder_name(path: str) -> str:
    path = path.removeprefix("file://").replace("\\", "/")
    name = _trim(path).rsplit("/", 1)[-1]
    return name or path
