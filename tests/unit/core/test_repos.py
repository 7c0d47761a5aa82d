"""One repo identity: every spelling of a repository that people and models really write gives
one name, on the server and the laptop alike (core.repos)."""

from __future__ import annotations

import pytest

from sessionvault.core.records import ListArgs, LoadArgs, SaveArgs, parse
from sessionvault.core.repos import canonical_repo, remote_identity

WIDGET = "github.com/acme/widget"

# (as written, canonical): remotes as `git remote -v`, forges' clone buttons, CI variables and
# models write them.
SPELLINGS: list[tuple[str, str]] = [
    ("git@github.com:acme/widget.git", WIDGET),
    ("git@github.com:Acme/Widget.git", WIDGET),
    ("git@github.com:acme/widget", WIDGET),
    ("github.com:acme/widget.git", WIDGET),
    ("https://github.com/acme/widget", WIDGET),
    ("https://github.com/acme/widget.git", WIDGET),
    ("https://github.com/acme/widget/", WIDGET),
    ("https://github.com/acme/widget.git/", WIDGET),
    ("HTTPS://GitHub.com/Acme/Widget", WIDGET),
    ("http://github.com/acme/widget", WIDGET),
    ("https://x-access-token:ghs_abc123@github.com/acme/widget.git", WIDGET),
    ("https://user@github.com/acme/widget", WIDGET),
    ("https://github.com/acme/widget?tab=readme#top", WIDGET),
    ("ssh://git@github.com/acme/widget.git", WIDGET),
    ("ssh://git@github.com:22/acme/widget", WIDGET),
    ("ssh://git@ssh.github.com:443/acme/widget.git", "ssh.github.com/acme/widget"),
    ("git+ssh://git@github.com/acme/widget.git", WIDGET),
    ("git://github.com/acme/widget.git", WIDGET),
    ("github.com/acme/widget", WIDGET),
    ("GitHub.com/Acme/Widget", WIDGET),
    ("  github.com/acme/widget\n", WIDGET),
    ("org-123@github.com:acme/widget.git", WIDGET),  # GitHub Enterprise managed users
    ("git@gitlab.com:group/subgroup/widget.git", "gitlab.com/group/subgroup/widget"),
    ("https://gitlab.com/group/subgroup/widget", "gitlab.com/group/subgroup/widget"),
    ("git@bitbucket.org:acme/widget.git", "bitbucket.org/acme/widget"),
    ("ssh://git@bitbucket.example.com:7999/acme/widget.git", "bitbucket.example.com/acme/widget"),
    ("git@ssh.dev.azure.com:v3/acme/proj/widget", "dev.azure.com/acme/proj/widget"),
    ("https://acme@dev.azure.com/acme/proj/_git/widget", "dev.azure.com/acme/proj/widget"),
    ("https://codeberg.org/acme/widget.git", "codeberg.org/acme/widget"),
    # Not remotes: a bare folder name stays a folder name; a local path becomes its folder's.
    ("widget", "widget"),
    ("Widget", "Widget"),
    ("my-project/", "my-project"),
    ("acme/widget", "acme/widget"),
    ("/home/ann/src/widget", "widget"),
    ("/srv/git/widget.git", "widget"),
    ("file:///srv/git/widget.git", "widget"),
    ("~/src/widget", "widget"),
    ("C:\\Users\\ann\\widget", "widget"),
    ("", ""),
]


@pytest.mark.parametrize(("written", "canonical"), SPELLINGS)
def test_every_spelling_of_a_repo_has_one_canonical_name(written: str, canonical: str) -> None:
    assert canonical_repo(written) == canonical


@pytest.mark.parametrize(("written", "canonical"), SPELLINGS)
def test_the_canonical_name_is_a_fixed_point(written: str, canonical: str) -> None:
    assert canonical_repo(canonical) == canonical


def test_credentials_in_a_remote_never_survive() -> None:
    assert "ghs_" not in canonical_repo("https://x-access-token:ghs_abc123@github.com/acme/widget")


@pytest.mark.parametrize(
    "url", ["/srv/git/x.git", "file:///srv/git/x.git", "", "host:", "widget", "https://[::1/x"]
)
def test_what_is_not_a_remote_has_no_remote_identity(url: str) -> None:
    assert remote_identity(url) is None


@pytest.mark.parametrize("model", [SaveArgs, LoadArgs, ListArgs])
def test_tool_arguments_carry_the_canonical_repo(model: type) -> None:
    extra = {"name": "n", "summary": "s"} if model is SaveArgs else {}
    args = parse(model, {"repo": "git@github.com:Acme/Widget.git", **extra})
    assert args.repo == WIDGET
