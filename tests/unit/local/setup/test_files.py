"""Applying a client config: safe, idempotent edits that keep the user's file as it was."""

from __future__ import annotations

import json
import stat
import tomllib
from datetime import datetime
from pathlib import Path

import pytest

from sessionvault.errors import ConfigFileError
from sessionvault.local.setup import files
from sessionvault.local.setup.files import apply, backup_folder, read
from sessionvault.local.setup.registry import config_path

from .documented import ENV_FORM, KEY, LITERAL, URL, parse

T1 = datetime(2026, 1, 2, 3, 4, 5)
T2 = datetime(2026, 1, 2, 3, 4, 9)


def backups(path: Path) -> list[Path]:
    """Every backup of `path`: <state>/backups/<run>/<its absolute path>; never one beside it."""
    real = path.resolve()
    assert [p for p in real.parent.iterdir() if p.name.startswith(real.name + ".")] == []
    return sorted(backup_folder().glob("*/" + str(real.relative_to(real.anchor))))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- apply ----------------------------------------------------------------------------------


@pytest.mark.parametrize("client", sorted(LITERAL))
def test_apply_creates_missing_file_and_folders(client: str, home: Path, cwd: Path) -> None:
    result = apply(client, URL, KEY, use_env=False, home=home, cwd=cwd, now=T1)
    path = config_path(client, home=home, cwd=cwd)
    container, entry = LITERAL[client]
    assert result.path == path and result.changed and result.backup is None
    assert parse(client, path.read_text()) == {container: {"sessionvault": entry}}
    assert mode(path) == 0o600  # it holds the key


def _existing(client: str) -> str:
    """A config the user already has: another server, other settings, 4-space indent."""
    container, _ = LITERAL[client]
    if client == "codex":
        return (
            "# my codex config\n"
            'model = "o3"  # favourite\n'
            "\n"
            "[mcp_servers.other]\n"
            'command = "other-mcp"  # keep me\n'
            "\n"
            "[profiles.fast]\n"
            'model = "o4-mini"\n'
        )
    data = {"theme": "dark", container: {"other": {"command": "other-mcp", "args": []}}}
    return json.dumps(data, indent=4) + "\n"


@pytest.mark.parametrize("client", sorted(LITERAL))
def test_apply_twice_is_idempotent_with_one_backup(client: str, home: Path, cwd: Path) -> None:
    path = config_path(client, home=home, cwd=cwd)
    path.parent.mkdir(parents=True, exist_ok=True)
    original = _existing(client)
    path.write_text(original)
    path.chmod(0o644)

    first = apply(client, URL, KEY, use_env=False, home=home, cwd=cwd, now=T1)
    written = path.read_text()
    second = apply(client, URL, KEY, use_env=False, home=home, cwd=cwd, now=T2)

    assert first.changed and not second.changed
    assert second.backup is None
    assert backups(path) == [first.backup]
    assert first.backup == backup_folder() / "20260102-030405" / path.relative_to(path.anchor)
    assert first.backup.read_text() == original
    assert mode(first.backup) == 0o600
    assert path.read_text() == written
    assert mode(path) == 0o600

    container, entry = LITERAL[client]
    expected = parse(client, original)
    expected[container]["sessionvault"] = entry
    assert parse(client, written) == expected


@pytest.mark.parametrize("client", sorted(set(LITERAL) - {"codex"}))
def test_apply_adds_one_entry_in_the_files_own_indent(client: str, home: Path, cwd: Path) -> None:
    path = config_path(client, home=home, cwd=cwd)
    path.parent.mkdir(parents=True, exist_ok=True)
    original = _existing(client)
    path.write_text(original)
    apply(client, URL, KEY, use_env=False, home=home, cwd=cwd, now=T1)
    # The only difference is our entry after "other", nested with the same 4 spaces.
    block = '"sessionvault": ' + json.dumps(LITERAL[client][1], indent=4)
    other_end = '"args": []\n        }'
    expected = original.replace(other_end, other_end + ",\n        " + block.replace("\n", "\n        "))
    assert expected != original
    assert path.read_text() == expected


def test_env_form_does_not_tighten_file_mode(home: Path, cwd: Path) -> None:
    path = config_path("cursor", home=home, cwd=cwd)
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "mcpServers": {}\n}\n')
    path.chmod(0o644)
    apply("cursor", URL, None, use_env=True, home=home, cwd=cwd, now=T1)
    assert mode(path) == 0o644
    assert KEY not in path.read_text()


def test_apply_replaces_a_stale_entry_and_nothing_else(home: Path, cwd: Path) -> None:
    path = config_path("gemini", home=home, cwd=cwd)
    path.parent.mkdir(parents=True)
    path.write_text(
        "{\n"
        '  "mcpServers": {\n'
        '    "sessionvault": {\n'
        '      "httpUrl": "http://old:1/mcp",\n'
        '      "headers": {"Authorization": "Bearer old"},\n'
        '      "timeout": 5000\n'
        "    },\n"
        '    "other": {"command": "x"}\n'
        "  },\n"
        '  "theme": "GitHub"\n'
        "}\n"
    )
    result = apply("gemini", URL, None, use_env=True, home=home, cwd=cwd, now=T1)
    assert result.changed
    assert path.read_text() == (
        "{\n"
        '  "mcpServers": {\n'
        '    "sessionvault": {\n'
        f'      "httpUrl": "{URL}",\n'
        '      "headers": {\n'
        '        "Authorization": "Bearer $SESSIONVAULT_API_KEY"\n'
        "      }\n"
        "    },\n"
        '    "other": {"command": "x"}\n'
        "  },\n"
        '  "theme": "GitHub"\n'
        "}\n"
    )


def test_zed_jsonc_keeps_comments_and_trailing_commas(home: Path, cwd: Path) -> None:
    path = config_path("zed", home=home, cwd=cwd)
    path.parent.mkdir(parents=True)
    path.write_text(
        "// Zed settings\n"
        "{\n"
        '    "theme": "One Dark", // my theme\n'
        "    /* fonts */\n"
        '    "buffer_font_size": 15,\n'
        '    "context_servers": {\n'
        '        "other": { "command": "x", "args": [] }, // keep me\n'
        "    },\n"
        "}\n"
    )
    assert apply("zed", URL, KEY, use_env=False, home=home, cwd=cwd, now=T1).changed
    assert path.read_text() == (
        "// Zed settings\n"
        "{\n"
        '    "theme": "One Dark", // my theme\n'
        "    /* fonts */\n"
        '    "buffer_font_size": 15,\n'
        '    "context_servers": {\n'
        '        "other": { "command": "x", "args": [] }, // keep me\n'
        '        "sessionvault": {\n'
        f'            "url": "{URL}",\n'
        '            "headers": {\n'
        f'                "Authorization": "Bearer {KEY}"\n'
        "            }\n"
        "        }\n"
        "    },\n"
        "}\n"
    )
    assert not apply("zed", URL, KEY, use_env=False, home=home, cwd=cwd, now=T2).changed
    assert len(backups(path)) == 1


def test_zed_without_context_servers_gets_them_after_a_line_comment(home: Path, cwd: Path) -> None:
    path = config_path("zed", home=home, cwd=cwd)
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "vim_mode": true // modal\n}\n')
    apply("zed", URL, KEY, use_env=False, home=home, cwd=cwd, now=T1)
    assert path.read_text() == (
        "{\n"
        '  "vim_mode": true, // modal\n'
        '  "context_servers": {\n'
        '    "sessionvault": {\n'
        f'      "url": "{URL}",\n'
        '      "headers": {\n'
        f'        "Authorization": "Bearer {KEY}"\n'
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n"
    )


def test_vscode_jsonc_with_tabs_inputs_and_empty_servers(home: Path, cwd: Path) -> None:
    path = config_path("vscode", home=home, cwd=cwd)
    path.parent.mkdir(parents=True)
    path.write_text('{\n\t// prompts for secrets\n\t"inputs": [],\n\t"servers": {\n\t\t// none yet\n\t}\n}\n')
    apply("vscode", URL, None, use_env=True, home=home, cwd=cwd, now=T1)
    assert path.read_text() == (
        "{\n"
        "\t// prompts for secrets\n"
        '\t"inputs": [],\n'
        '\t"servers": {\n'
        '\t\t"sessionvault": {\n'
        '\t\t\t"type": "http",\n'
        f'\t\t\t"url": "{URL}",\n'
        '\t\t\t"headers": {\n'
        '\t\t\t\t"Authorization": "Bearer ${env:SESSIONVAULT_API_KEY}"\n'
        "\t\t\t}\n"
        "\t\t}\n"
        "\t\t// none yet\n"
        "\t}\n"
        "}\n"
    )


def test_one_line_json_stays_on_one_line(home: Path, cwd: Path) -> None:
    path = config_path("cursor", home=home, cwd=cwd)
    path.parent.mkdir(parents=True)
    path.write_text('{"mcpServers": {}}')
    apply("cursor", URL, None, use_env=True, home=home, cwd=cwd, now=T1)
    text = path.read_text()
    assert "\n" not in text
    assert json.loads(text) == {"mcpServers": {"sessionvault": ENV_FORM["cursor"]}}


def test_codex_toml_keeps_comments_and_tables(home: Path, cwd: Path) -> None:
    path = config_path("codex", home=home, cwd=cwd)
    path.parent.mkdir(parents=True)
    path.write_text(_existing("codex"))
    apply("codex", URL, None, use_env=True, home=home, cwd=cwd, now=T1)
    text = path.read_text()
    for kept in ("# my codex config", 'model = "o3"  # favourite', 'command = "other-mcp"  # keep me'):
        assert kept in text
    assert text.index("[mcp_servers.sessionvault]") < text.index("[profiles.fast]")
    assert tomllib.loads(text) == {
        "model": "o3",
        "mcp_servers": {"other": {"command": "other-mcp"}, "sessionvault": ENV_FORM["codex"]},
        "profiles": {"fast": {"model": "o4-mini"}},
    }
    # Switching to a literal key replaces the entry: no stale bearer_token_env_var left.
    apply("codex", URL, KEY, use_env=False, home=home, cwd=cwd, now=T2)
    assert tomllib.loads(path.read_text())["mcp_servers"]["sessionvault"] == LITERAL["codex"][1]
    assert len(backups(path)) == 2


def test_changing_applies_in_one_second_keep_both_backups(home: Path, cwd: Path) -> None:
    path = config_path("cursor", home=home, cwd=cwd)
    path.parent.mkdir(parents=True)
    path.write_text("{}\n")
    apply("cursor", URL, KEY, use_env=False, home=home, cwd=cwd, now=T1)
    second = apply("cursor", "https://other:9/mcp", KEY, use_env=False, home=home, cwd=cwd, now=T1)
    assert second.backup is not None
    assert second.backup.relative_to(backup_folder()).parts[0] == "20260102-030405-1"
    assert len(backups(path)) == 2


def test_apply_through_a_symlinked_config(home: Path, cwd: Path, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "cursor-mcp.json"
    real.parent.mkdir()
    real.write_text('{\n  "mcpServers": {}\n}\n')
    link = config_path("cursor", home=home, cwd=cwd)
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    apply("cursor", URL, None, use_env=True, home=home, cwd=cwd, now=T1)
    assert link.is_symlink()
    assert json.loads(real.read_text())["mcpServers"]["sessionvault"] == ENV_FORM["cursor"]


@pytest.mark.parametrize("content", ['{"mcpServers": ["not", "an", "object"]}', "{ broken", "[]"])
def test_apply_refuses_files_it_cannot_edit_safely(content: str, home: Path, cwd: Path) -> None:
    path = config_path("cursor", home=home, cwd=cwd)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(ConfigFileError):
        apply("cursor", URL, KEY, use_env=False, home=home, cwd=cwd, now=T1)
    assert path.read_text() == content
    assert backups(path) == []


def test_kilo_code_keeps_the_comments_of_its_jsonc(home: Path, cwd: Path) -> None:
    path = config_path("kilo-code", home=home, cwd=cwd)
    path.parent.mkdir(parents=True)
    original = '{\n  // my kilo setup\n  "model": "x", /* keep */\n  "mcp": {},\n}\n'
    path.write_text(original)
    apply("kilo-code", URL, None, use_env=True, home=home, cwd=cwd, now=T1)
    text = path.read_text()
    assert "// my kilo setup" in text and "/* keep */" in text
    assert read(path)["mcp"]["sessionvault"] == ENV_FORM["kilo-code"]


def test_amp_container_is_one_dotted_key_beside_other_amp_settings(home: Path, cwd: Path) -> None:
    """Amp's settings are flat dotted keys: `amp.mcpServers` is one key, not `amp` -> `mcpServers`."""
    path = config_path("amp", home=home, cwd=cwd)
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "amp.tools.disable": ["browser"],\n  "amp.mcpServers": {}\n}\n')
    apply("amp", URL, KEY, use_env=False, home=home, cwd=cwd, now=T1)
    assert read(path) == {
        "amp.tools.disable": ["browser"],
        "amp.mcpServers": {"sessionvault": LITERAL["amp"][1]},
    }


# --- backups --------------------------------------------------------------------------------


def test_backups_are_kept_in_the_state_folder_not_in_the_project(home: Path, cwd: Path, state: Path) -> None:
    path = cwd / ".mcp.json"  # Claude Code's project file: inside a git work tree
    path.write_text('{"mcpServers": {}}\n')
    result = apply("claude-code", URL, KEY, use_env=False, home=home, cwd=cwd, now=T1)
    assert sorted(p.name for p in cwd.iterdir()) == [".mcp.json"]  # nothing for `git add .`
    assert result.backup is not None and result.backup.is_relative_to(state / "backups")
    assert result.backup.read_text() == '{"mcpServers": {}}\n'
    for folder in (state, state / "backups", result.backup.parents[len(path.parts) - 2]):
        assert mode(folder) == 0o700, folder  # the state folder, backups/, the run's folder
    assert mode(result.backup) == 0o600


def test_one_run_makes_one_backup_per_file_of_the_file_as_it_was(home: Path, cwd: Path) -> None:
    settings, created = cwd / ".claude" / "settings.json", cwd / "new.json"
    settings.parent.mkdir()
    settings.write_text('{"theme": "dark"}\n')
    with files.one_run(now=T1):
        results = [
            files.set_member(settings, "json", "hooks", event, [{"command": event}])
            for event in ("SessionStart", "Stop", "SubagentStop", "PreCompact")
        ]
        made = [files.set_member(created, "json", "a", name, 1) for name in ("x", "y")]
    assert all(r.changed for r in results) and {r.backup for r in results} == {results[0].backup}
    assert backups(settings) == [results[0].backup]
    assert results[0].backup is not None and results[0].backup.read_text() == '{"theme": "dark"}\n'
    assert [r.backup for r in made] == [None, None]  # the run made it: nothing to go back to
    assert backups(created) == []
    # Outside a run every change is a run of its own.
    again = files.set_member(settings, "json", "hooks", "Stop", [])
    assert again.backup is not None and len(backups(settings)) == 2
