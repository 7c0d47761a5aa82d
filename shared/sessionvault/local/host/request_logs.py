"""Where a local server's request lines go: JSON on stdout where nobody reads the terminal (a
service's journal, a pipe, CI), but on a terminal into `logs/requests.log` in the state folder,
so that one JSON line per call does not run through the banner and the key it shows."""

from __future__ import annotations

from pathlib import Path

from sessionvault import telemetry


def route(home: Path | None, *, terminal: bool) -> Path | None:
    """The file the request lines now go to, or None (they stay on stdout): only on a terminal,
    for a server with a state folder."""
    if not terminal or home is None:
        return None
    path = home / "logs" / "requests.log"
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    telemetry.write_to(path)
    return path
