"""The names the package takes from the MCP SDK are the ones docs/architecture.md lists ("What
the server takes from the MCP SDK"), no more and no fewer: an SDK upgrade is checked against
one list, and a new reach into the SDK is written down where it is made."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "shared" / "sessionvault"
ROW = re.compile(r"^\| `(mcp[\w.]*)` \| (.+?) \| .+ \|$")


def imported() -> dict[str, set[str]]:
    """module -> the names imported from it (`from mcp... import x`, anywhere in a module)."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
                assert not any(n == "mcp" or n.startswith(("mcp.", "mcp_types")) for n in names), path
            elif isinstance(node, ast.ImportFrom) and node.module:
                module = node.module
                if module == "mcp" or module.startswith(("mcp.", "mcp_types")):
                    found[module] |= {alias.name for alias in node.names}
    return dict(found)


def documented() -> dict[str, set[str]]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text[text.index("**What the server takes from the MCP SDK.**") :]
    rows: dict[str, set[str]] = {}
    for line in table.splitlines():
        match = ROW.match(line)
        if match:
            rows[match[1]] = set(re.findall(r"`(\w+)`", match[2]))
        elif rows and not line.startswith("|"):
            break
    return rows


def test_every_name_taken_from_the_sdk_is_the_documented_list() -> None:
    assert imported() == documented()
