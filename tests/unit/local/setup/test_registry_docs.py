"""The text agrees with the client registry (issue 37: README listed 20 clients where `connect`
had 22, and named four hook clients of nine): README's client list, its hook and checkpoint
sentences and its proven CLIs; docs/clients.md's capture table and its versions; the Cursor
variable syntax wherever a snippet shows it. A client added to the registry fails here until
the text names it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sessionvault.local.setup.hook_clients import HOOK_CLIENTS
from sessionvault.local.setup.registry import CLIENTS
from sessionvault.names import KEY_ENV

from ....clients.conftest import VERSIONS

ROOT = Path(__file__).resolve().parents[4]
README = (ROOT / "README.md").read_text()
CLIENTS_MD = (ROOT / "docs" / "clients.md").read_text()
# The real CLIs `make clients-test` runs (their npm binary) and the registry client each proves.
PROVEN = {
    "claude": "claude-code",
    "gemini": "gemini",
    "codex": "codex",
    "opencode": "opencode",
    "qwen": "qwen",
    "copilot": "copilot-cli",
    "droid": "droid",
    "cline": "cline-cli",
    "kilo": "kilo-code",
}


def paragraph(text: str, start: str) -> str:
    """The paragraph of `text` that holds `start`, as one line."""
    at = text.index(start)
    begin, end = text.rfind("\n\n", 0, at) + 2, text.find("\n\n", at)
    return " ".join(text[begin:end].split())


def sentence_listing(text: str, start: str) -> str:
    """From `start` to the end of its parenthesis."""
    at = text.index(start)
    return text[at : text.index(")", at) + 1]


def titles(names: list[str]) -> set[str]:
    return {CLIENTS[n].title for n in names}


def named(text: str) -> set[str]:
    """The registry titles named in `text`, the longest first (`Cline CLI` is not `Cline`)."""
    found = set()
    for title in sorted((spec.title for spec in CLIENTS.values()), key=len, reverse=True):
        if title in text:
            found.add(title)
            text = text.replace(title, "")
    return found


def test_every_proven_cli_is_a_registry_client() -> None:
    assert set(PROVEN) == set(VERSIONS) and set(PROVEN.values()) <= set(CLIENTS)


def test_readme_names_every_client_connect_knows_and_no_other() -> None:
    listing = paragraph(README, "`sessionvault connect <client>` prints")
    listed = re.findall(r"`([a-z-]+)`", listing.split("(each shape")[0])
    assert listed[-len(CLIENTS) :] == list(CLIENTS)


def test_readme_names_the_cli_each_client_test_runs() -> None:
    proven = sentence_listing(
        paragraph(README, "`sessionvault connect <client>` prints"), "client's documentation;"
    )
    assert named(proven) == titles(list(PROVEN.values()))


def test_readme_names_every_hook_client_and_every_checkpoint_client() -> None:
    hooks = sentence_listing(
        paragraph(README, "`sessionvault connect <client>` prints"), "session-start hook ("
    )
    assert named(hooks) == titles(list(HOOK_CLIENTS))
    ends = paragraph(README, "`connect --hooks` also hooks the client's own end of work")
    with_ends = [name for name, spec in HOOK_CLIENTS.items() if spec.end_events]
    assert named(ends.split(". ")[0]) == titles(with_ends)


@pytest.mark.parametrize("client", list(HOOK_CLIENTS))
def test_the_capture_table_has_a_row_per_hook_client_with_the_version_tested(client: str) -> None:
    row = next((r for r in CLIENTS_MD.splitlines() if r.startswith("| ") and f"(`{client}`)" in r), None)
    assert row is not None, f"docs/clients.md has no capture-table row for {client}"
    binary = next((b for b, c in PROVEN.items() if c == client), None)
    if binary is None:
        assert HOOK_CLIENTS[client].unverified and "unverified" in row.lower(), row
    else:
        assert f"| {VERSIONS[binary]} |" in row, row


def test_every_cursor_snippet_uses_the_variable_syntax_cursor_expands() -> None:
    spelled = CLIENTS["cursor"].env_ref
    assert spelled is not None and spelled % KEY_ENV == "${env:SESSIONVAULT_API_KEY}"
    for name, text in (("README.md", README), ("docs/clients.md", CLIENTS_MD)):
        for block in re.findall(r"```json\n(.*?)```", text, re.S):
            if ".cursor" in block or '"cursor"' in block.lower():
                assert "${" + KEY_ENV + "}" not in block, (name, block)
    cursor = CLIENTS_MD[CLIENTS_MD.index("\n## Cursor\n") + 1 :]
    assert spelled % KEY_ENV in cursor[: cursor.index("\n## ")]
