"""What Claude Code records about a project's `.mcp.json` server: which projects it knows
(~/.claude.json) and whether the user approved our server in each ("Pending approval" until)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessionvault.local.setup import claude_code


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def ours(folder: Path, url: str = "http://127.0.0.1:8765/mcp") -> None:
    write(folder / ".mcp.json", {"mcpServers": {"sessionvault": {"type": "http", "url": url}}})


@pytest.fixture
def project(home: Path) -> Path:
    folder = home / "src" / "shop"
    ours(folder)
    return folder


def state_of(home: Path, folder: Path) -> str:
    return claude_code.approval(folder, home, claude_code.known(home))


def test_a_server_nobody_approved_is_pending(home: Path, project: Path) -> None:
    assert state_of(home, project) == "pending"
    write(home / ".claude.json", {"projects": {str(project): {"hasTrustDialogAccepted": True}}})
    assert state_of(home, project) == "pending"  # trusting the folder is not approving servers


@pytest.mark.parametrize(
    ("where", "setting"),
    [
        ("state", {"enabledMcpjsonServers": ["sessionvault"]}),  # "Use this MCP server"
        ("state", {"enableAllProjectMcpServers": True}),
        ("settings", {"enabledMcpjsonServers": ["other", "sessionvault"]}),
        ("settings", {"enableAllProjectMcpServers": True}),
    ],
)
def test_an_approval_is_read_from_claude_json_or_the_user_settings(
    home: Path, project: Path, where: str, setting: dict[str, Any]
) -> None:
    if where == "state":
        write(home / ".claude.json", {"projects": {str(project): setting}})
    else:
        write(home / ".claude" / "settings.json", setting)
    assert state_of(home, project) == "approved"
    assert state_of(home, home / "src" / "elsewhere") == ("approved" if where == "settings" else "pending")


def test_a_rejection_wins_over_an_approval(home: Path, project: Path) -> None:
    write(home / ".claude.json", {"projects": {str(project): {"disabledMcpjsonServers": ["sessionvault"]}}})
    write(home / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    assert state_of(home, project) == "rejected"
    assert "reset-project-choices" in claude_code.what_to_do(project, "rejected")


def test_the_projects_own_settings_count_only_in_a_trusted_folder(home: Path, project: Path) -> None:
    """Else a cloned repository could approve its own servers."""
    write(project / ".claude" / "settings.local.json", {"enabledMcpjsonServers": ["sessionvault"]})
    assert state_of(home, project) == "pending"
    write(home / ".claude.json", {"projects": {str(project): {"hasTrustDialogAccepted": True}}})
    assert state_of(home, project) == "approved"


def test_the_projects_claude_code_knows_are_found_from_anywhere(home: Path, project: Path) -> None:
    sub, plain, gone = project / "web", home / "src" / "plain", home / "src" / "deleted"
    sub.mkdir()
    plain.mkdir()
    write(plain / ".mcp.json", {"mcpServers": {"other": {"url": "http://x"}}})
    recorded = {str(p): {} for p in (sub, plain, gone)}
    recorded[str(sub)] = {"enabledMcpjsonServers": ["sessionvault"]}
    write(home / ".claude.json", {"projects": {**recorded, "not/absolute": {}}})
    found = claude_code.projects(home)
    # The subfolder claude was started in reads the project's .mcp.json (a parent's).
    assert [(p.folder, p.mcp_json, p.approval) for p in found] == [(sub, project / ".mcp.json", "approved")]
    here = claude_code.projects(home, also=[project])
    assert [(p.folder, p.approval) for p in here] == [(project, "pending"), (sub, "approved")]


def test_a_broken_claude_json_is_no_project(home: Path, project: Path) -> None:
    home.mkdir(exist_ok=True)
    (home / ".claude.json").write_text("{not json")
    assert claude_code.known(home) == {}
    assert [p.approval for p in claude_code.projects(home, also=[project])] == ["pending"]
