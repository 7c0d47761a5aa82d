"""What the background service is (`Service`) and the files the OS runs it from: a systemd user
unit on Linux, a launchd agent's plist on macOS (`local/host/service.py` installs them)."""

from __future__ import annotations

import plistlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessionvault.errors import ConfigError

UNIT = "sessionvault.service"
LABEL = "dev.sessionvault"
# Exit 2 is a clear refusal (port or state folder in use, no database): retrying cannot help.
REFUSED_EXIT = 2


@dataclass(frozen=True)
class Service:
    """What the service runs and where its files go, for one platform."""

    platform: str  # "linux" or "darwin"
    argv: list[str]  # absolute program, then its arguments
    env: dict[str, str]
    user_home: Path
    port: int
    state: Path
    external_database: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        if self.platform == "darwin":
            return self.user_home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
        return self.user_home / ".config" / "systemd" / "user" / UNIT

    @property
    def log_dir(self) -> Path:
        return self.user_home / "Library" / "Logs" / "SessionVault"

    def text(self) -> str:
        return launchd_plist(self).decode() if self.platform == "darwin" else systemd_unit(self)


# ---------------------------------------------------------------- systemd


def _systemd_quote(word: str) -> str:
    """One ExecStart word: double-quoted, `\\` and `"` escaped, `%` and `$` doubled (systemd
    would expand specifiers and variables in them)."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return f'"{escaped}"'


def _systemd_env(name: str, value: str) -> str:
    if "\n" in value:
        raise ConfigError(f"{name} holds a line break: it cannot go into a systemd unit")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'Environment="{name}={escaped}"'


def systemd_unit(s: Service) -> str:
    what = "against DATABASE_URL" if s.external_database else f"embedded, state in {s.state}"
    lines = [
        "# Written by `sessionvault service install`; `sessionvault service uninstall` removes it.",
        "[Unit]",
        f"Description=SessionVault MCP server on 127.0.0.1:{s.port} ({what})",
        "",
        "[Service]",
        "Type=simple",
        "ExecStart=" + " ".join(_systemd_quote(word) for word in s.argv),
        *(_systemd_env(k, v) for k, v in s.env.items()),
        "Restart=on-failure",
        "RestartSec=5",
        f"RestartPreventExitStatus={REFUSED_EXIT}",
        # As Ctrl-C: the server stops its embedded database on the way out.
        "KillSignal=SIGINT",
        "TimeoutStopSec=30",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- launchd


def launchd_plist(s: Service) -> bytes:
    logs = s.log_dir
    agent: dict[str, Any] = {
        "Label": LABEL,
        "ProgramArguments": list(s.argv),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},  # restarted after a failure, not after a stop
        "ThrottleInterval": 5,
        "ProcessType": "Background",
        "WorkingDirectory": str(s.user_home),
        "StandardOutPath": str(logs / "sessionvault.log"),
        "StandardErrorPath": str(logs / "sessionvault.err.log"),
        "EnvironmentVariables": dict(s.env),
        "ExitTimeOut": 30,
    }
    return plistlib.dumps(agent, fmt=plistlib.FMT_XML, sort_keys=True)
