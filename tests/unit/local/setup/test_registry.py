"""The client registry: each client's documented snippet and config file location.

The expected values come from `documented`, written by hand from docs/clients.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sessionvault.errors import ConfigFileError
from sessionvault.local.setup.registry import CLIENTS, config_path, render

from .documented import ENV_FORM, KEY, LINUX_PATHS, LITERAL, MAC_PATHS, NO_ENV, URL, parse

# --- render -------------------------------------------------------------------------------


def test_registry_covers_the_required_clients() -> None:
    assert set(CLIENTS) == set(LITERAL)


@pytest.mark.parametrize("client", sorted(LITERAL))
def test_render_literal_key_matches_documented_shape(client: str) -> None:
    container, entry = LITERAL[client]
    assert parse(client, render(client, URL, KEY, use_env=False)) == {container: {"sessionvault": entry}}


@pytest.mark.parametrize("client", sorted(ENV_FORM))
def test_render_env_form_keeps_the_key_out_of_the_text(client: str) -> None:
    text = render(client, URL, KEY, use_env=True)
    assert KEY not in text
    container, _ = LITERAL[client]
    assert parse(client, text) == {container: {"sessionvault": ENV_FORM[client]}}
    # The env form needs no key at hand: the client resolves it when it starts.
    assert render(client, URL, None, use_env=True) == text


@pytest.mark.parametrize("client", NO_ENV)
def test_clients_without_env_support_write_the_key_or_refuse(client: str) -> None:
    assert render(client, URL, KEY, use_env=True) == render(client, URL, KEY, use_env=False)
    with pytest.raises(ConfigFileError, match="API key"):
        render(client, URL, None, use_env=True)


def test_codex_snippet_is_the_table_users_paste() -> None:
    assert render("codex", URL, None, use_env=True) == (
        f'[mcp_servers.sessionvault]\nurl = "{URL}"\nbearer_token_env_var = "SESSIONVAULT_API_KEY"\n'
    )


def test_literal_form_without_a_key_is_refused() -> None:
    with pytest.raises(ConfigFileError, match="API key"):
        render("cursor", URL, None, use_env=False)


def test_unknown_client_is_refused() -> None:
    with pytest.raises(ConfigFileError, match="unknown client"):
        render("notepad", URL, KEY, use_env=False)


# --- config_path ----------------------------------------------------------------------------


def _expected_path(spelled: str, home: Path, cwd: Path) -> Path:
    base, rest = (home, spelled[2:]) if spelled.startswith("~/") else (cwd, spelled[2:])
    return base / rest


@pytest.mark.parametrize("client", sorted(LINUX_PATHS))
def test_config_path_on_linux(client: str, home: Path, cwd: Path) -> None:
    expected = _expected_path(LINUX_PATHS[client], home, cwd)
    assert config_path(client, home=home, cwd=cwd) == expected


@pytest.mark.parametrize("client", sorted(MAC_PATHS))
def test_config_path_on_macos(client: str, home: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    expected = _expected_path(MAC_PATHS[client], home, cwd)
    assert config_path(client, home=home, cwd=cwd) == expected


def test_claude_code_config_goes_to_the_repository_root(tmp_path: Path) -> None:
    """Claude Code reads `.mcp.json` from the folder it starts in and its parents: a `connect`
    run in a subfolder writes it at the git top level, where every `claude` in the repo finds it."""
    import subprocess

    repo_root = tmp_path / "repo"
    sub = repo_root / "src" / "pkg"
    sub.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo_root)], check=True, timeout=30)
    top = repo_root.resolve()
    assert config_path("claude-code", home=tmp_path, cwd=sub) == top / ".mcp.json"
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    assert config_path("claude-code", home=tmp_path, cwd=outside) == outside / ".mcp.json"


def test_the_banners_cursor_snippet_is_what_connect_cursor_writes() -> None:
    """Issue 37 item 5: on every run after the first (no key to show), the banner wrote
    `${SESSIONVAULT_API_KEY}`, which Cursor sends as those characters; it expands only
    `${env:NAME}`. The banner's snippet is the registry's own entry, key or reference."""
    from sessionvault.local.setup.registry import quickstart

    url = "http://127.0.0.1:8765/mcp"
    later = quickstart(url, None)
    assert '"Authorization": "Bearer ${env:SESSIONVAULT_API_KEY}"' in later
    assert json.loads(render("cursor", url, None, use_env=True))["mcpServers"]["sessionvault"]["headers"] == {
        "Authorization": "Bearer ${env:SESSIONVAULT_API_KEY}"
    }
    first = quickstart(url, "sv_live_" + "k" * 32)
    assert f'"Authorization": "Bearer sv_live_{"k" * 32}"' in first
