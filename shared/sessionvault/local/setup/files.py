"""Writing one entry into a client's own config file, safely: everything else in the file is
kept (comments too), the edit is re-parsed and checked before it is written, the old file is
backed up, and the write is atomic. Client configs and session-start hooks both go through
`set_member`.

Backups go into the state folder, never beside the file: a project's `.mcp.json` or
`.claude/settings.json` sits in a git work tree, where `git add .` would commit a copy (which
may hold a key). One run of `connect` makes one backup per file, however many entries it
changes there: the file as it was before the run."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from sessionvault.errors import ConfigFileError
from sessionvault.local.config import state_folder
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


BACKUPS = "backups"  # the folder, in the state folder, that holds every run's backups


class Backups:
    """One run's backups: `<state>/backups/<YYYYmmdd-HHMMSS>/<the file's absolute path>` (the
    folder says when, the path inside it which file), private (0700 folders, 0600 files). A
    file is copied on its first change in the run only; a file the run created has none."""

    def __init__(self, folder: Path, now: datetime | None = None) -> None:
        self.folder = folder
        self.now = now or datetime.now()
        self.kept: dict[Path, Path | None] = {}  # each file seen -> its backup
        self._run: Path | None = None

    def keep(self, real: Path, text: str) -> Path | None:
        """The backup of `real` (whose content is `text` before this change), made now unless
        this run has seen the file before."""
        if real not in self.kept:
            copy = self.run_folder() / real.relative_to(real.anchor) if real.exists() else None
            if copy is not None:
                write_atomic(copy, text, 0o600)  # the old file may hold a key
            self.kept[real] = copy
        return self.kept[real]

    def run_folder(self) -> Path:
        if self._run is None:
            self.folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.folder.mkdir(exist_ok=True, mode=0o700)
            stem = f"{self.now:%Y%m%d-%H%M%S}"
            run, n = self.folder / stem, 1
            while run.exists():  # another run within the same second
                run, n = self.folder / f"{stem}-{n}", n + 1
            run.mkdir(mode=0o700)
            self._run = run
        return self._run


_RUN: ContextVar[Backups | None] = ContextVar("sessionvault_backups", default=None)


def backup_folder(home: Path | None = None) -> Path:
    """Where backups go: `backups` in the state folder ($SESSIONVAULT_HOME, else .sessionvault
    in `home`, default the user's)."""
    return state_folder(os.environ, home) / BACKUPS


@contextmanager
def one_run(now: datetime | None = None, home: Path | None = None) -> Iterator[Backups]:
    """Every change made inside is one run: one backup per file, in one folder."""
    backups = Backups(backup_folder(home), now)
    token = _RUN.set(backups)
    try:
        yield backups
    finally:
        _RUN.reset(token)


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
    backups = _RUN.get() or Backups(backup_folder(home), now)
    return set_member(path, spec.fmt, spec.container, SERVER_NAME, value, private=private, backups=backups)


def set_member(
    path: Path,
    fmt: str,
    container: str,
    name: str,
    value: Any,
    *,
    private: bool = False,
    now: datetime | None = None,
    backups: Backups | None = None,
) -> ApplyResult:
    """Make `file[container][name] == value`, keeping everything else (`set_members`)."""
    return set_members(path, fmt, {(container, name): value}, private=private, now=now, backups=backups)


def set_members(
    path: Path,
    fmt: str,
    values: Mapping[tuple[str, str], Any],
    *,
    private: bool = False,
    now: datetime | None = None,
    backups: Backups | None = None,
    initial: str = "",
) -> ApplyResult:
    """Make `file[container][name] == value` for each (container, name) of `values`, keeping
    everything else, in one write (a missing file starts from `initial`).

    Idempotent: when the values are already there, the file is not touched and no backup is
    made. Otherwise the old file is copied into the state folder first (`Backups`: once per
    file in a `one_run`, else a run of its own; a file that did not exist has none)."""
    real = path.resolve()  # follow a symlinked config (dotfile managers), keep the link
    existed = real.exists()
    old = real.read_text(encoding="utf-8") if existed else initial
    load, put = FORMATS[fmt]
    data = load(old)
    for container, _ in values:
        if not isinstance(data.get(container, {}), dict):
            raise ConfigFileError(f"{path}: {container!r} is not an object; fix it by hand")
    changed = {at: value for at, value in values.items() if data.get(at[0], {}).get(at[1]) != value}
    if not changed and existed:
        if private:
            real.chmod(0o600)
        return ApplyResult(path=path, changed=False, backup=None)
    new, expected = old, dict(data)
    for (container, name), value in changed.items():
        new = put(new, container, value, name)
        expected[container] = {**expected.get(container, {}), name: value}
    # The edit is textual (to keep comments), so check that the only change is ours.
    if load(new) != expected:
        raise ConfigFileError(f"{path}: could not edit the file safely; nothing was written")
    backup = (backups or _RUN.get() or Backups(backup_folder(), now)).keep(real, old)
    mode = 0o600 if private else (real.stat().st_mode & 0o777 if existed else 0o644)
    write_atomic(real, new, mode)
    return ApplyResult(path=path, changed=True, backup=backup)


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
