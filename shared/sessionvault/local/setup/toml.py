"""TOML configs (Codex): read with tomllib, edited with tomlkit so that comments, ordering and
the user's other tables survive. tomlkit is imported only by the functions that write (it takes
~0.2 s to import, and every CLI command reaches this module through the client table)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sessionvault.errors import ConfigFileError

if TYPE_CHECKING:
    import tomlkit.items


def load(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"not TOML: {exc}") from None


def _table(entry: Mapping[str, Any]) -> tomlkit.items.Table:
    import tomlkit

    table = tomlkit.table()
    for k, v in entry.items():
        if isinstance(v, Mapping):  # headers read best inline: http_headers = { ... }
            inline = tomlkit.inline_table()
            inline.update(v)
            v = inline
        table[k] = v
    return table


def dumps(doc: Mapping[str, Mapping[str, Any]]) -> str:
    """A fresh TOML document holding `doc` (container -> name -> entry)."""
    import tomlkit

    out = tomlkit.document()
    for container, servers in doc.items():
        # A super table prints as [mcp_servers.sessionvault], without an empty [mcp_servers].
        holder = tomlkit.table(is_super_table=True)
        for name, entry in servers.items():
            holder[name] = _table(entry)
        out[container] = holder
    return tomlkit.dumps(out)


def put(text: str, container: str, entry: Any, name: str) -> str:
    import tomlkit

    # tomlkit keeps comments, ordering and the other tables of the user's file.
    doc = tomlkit.parse(text)
    if container not in doc:
        doc[container] = tomlkit.table(is_super_table=True)
    table = _table(entry)
    table.add(tomlkit.nl())  # keep a blank line before whatever table follows
    doc[container][name] = table
    return tomlkit.dumps(doc)
