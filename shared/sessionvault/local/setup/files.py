"""Writing one entry into a client's own config file, safely: everything else in the file is
kept (comments too), the edit is re-parsed and checked before it is written, the old file is
backed up, and the write is atomic. Client configs and session-start hooks both go through
`set_member`."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from sessionvault.errors import ConfigFileError
from sessionvault.local.remote.rpc import require_safe_url
from sessionvault.local.setup import jsonc, toml
from sessionvault.local.setup.registry import client_spec, config_path, entry, holds_literal_key
from sessionvault.names import SERVER_NAME


class Format(NamedTuple):
    load: Callable[[str], dict[str, Any]]
    put: Callable[[str, str, Any, str], str]  # (text, container, value, name) -> new text


FORMATS = {"json": Format(jsonc.load, jsonc.put), "toml": Format(toml.load, toml.put)}


@dataclass(frozen=True)
class ApplyResult:
    path: Path
    changed: bool
    backup: Path | None  # None when nothing changed or there was no file to back up


def read(path: Path, fmt: str = "json") -> dict[str, Any]:
    """The parsed file; {} when it does not exist."""
    return FORMATS[fmt].load(path.read_text(encoding="utf-8") if path.exists() else "")


def apply(
    client: str,
    url: str,
    key: str | None,
    *,
    use_env: bool,
    home: Path,
    cwd: Path,
    now: datetime | None = None,
) -> ApplyResult:
    """Write the sessionvault entry into the client's config file, keeping everything else.
    A file that holds the key itself is made private (0600)."""
    spec = client_spec(client)
    require_safe_url(url)
    value = entry(spec, url, key, use_env)
    path = config_path(client, home=home, cwd=cwd)
    private = holds_literal_key(spec, use_env)
    return set_member(path, spec.fmt, spec.container, SERVER_NAME, value, private=private, now=now)


def set_member(
    path: Path,
    fmt: str,
    container: str,
    name: str,
    value: Any,
    *,
    private: bool = False,
    now: datetime | None = None,
) -> ApplyResult:
    """Make `file[container][name] == value`, keeping everything else.

    Idempotent: when the value is already there, the file is not touched and no backup is
    made. Otherwise the old file is copied to `<file>.bak-YYYYmmddHHMMSS` first."""
    real = path.resolve()  # follow a symlinked config (dotfile managers), keep the link
    old = real.read_text(encoding="utf-8") if real.exists() else ""
    load, put = FORMATS[fmt]
    data = load(old)
    holder = data.get(container, {})
    if not isinstance(holder, dict):
        raise ConfigFileError(f"{path}: {container!r} is not an object; fix it by hand")
    if holder.get(name) == value:
        if private:
            real.chmod(0o600)
        return ApplyResult(path=path, changed=False, backup=None)

    new = put(old, container, value, name)
    # The edit is textual (to keep comments), so check that the only change is ours.
    if load(new) != {**data, container: {**holder, name: value}}:
        raise ConfigFileError(f"{path}: could not edit the file safely; nothing was written")
    backup = _backup(real, old, now or datetime.now()) if real.exists() else None
    mode = 0o600 if private else (real.stat().st_mode & 0o777 if real.exists() else 0o644)
    write_atomic(real, new, mode)
    return ApplyResult(path=path, changed=True, backup=backup)


def _backup(real: Path, text: str, now: datetime) -> Path:
    stem = f"{real.name}.bak-{now:%Y%m%d%H%M%S}"
    backup, n = real.with_name(stem), 1
    while backup.exists():  # two changing applies within one second
        backup, n = real.with_name(f"{stem}-{n}"), n + 1
    # The old file may hold a key: the copy is private whatever the original's mode was.
    write_atomic(backup, text, 0o600)
    return backup


def write_atomic(path: Path, text: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
