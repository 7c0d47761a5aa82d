"""`sessionvault service`: the systemd unit and the launchd agent it writes, and what install
does where no user systemd answers (the commands are faked; nothing is started)."""

from __future__ import annotations

import json
import os
import plistlib
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from sessionvault.errors import ConfigError
from sessionvault.local import config
from sessionvault.local.host import service, service_units

SV = "/opt/sessionvault/bin/sessionvault"

# launchd.plist(5): every key a user agent may carry, with its type.
LAUNCHD_KEYS: dict[str, type | tuple[type, ...]] = {
    "Label": str,
    "Disabled": bool,
    "UserName": str,
    "GroupName": str,
    "inetdCompatibility": dict,
    "LimitLoadToHosts": list,
    "LimitLoadFromHosts": list,
    "LimitLoadToSessionType": (str, list),
    "Program": str,
    "ProgramArguments": list,
    "EnableGlobbing": bool,
    "EnableTransactions": bool,
    "OnDemand": bool,
    "KeepAlive": (bool, dict),
    "RunAtLoad": bool,
    "RootDirectory": str,
    "WorkingDirectory": str,
    "EnvironmentVariables": dict,
    "Umask": int,
    "TimeOut": int,
    "ExitTimeOut": int,
    "ThrottleInterval": int,
    "InitGroups": bool,
    "WatchPaths": list,
    "QueueDirectories": list,
    "StartOnMount": bool,
    "StartInterval": int,
    "StartCalendarInterval": (dict, list),
    "StandardInPath": str,
    "StandardOutPath": str,
    "StandardErrorPath": str,
    "Debug": bool,
    "WaitForDebugger": bool,
    "SoftResourceLimits": dict,
    "HardResourceLimits": dict,
    "Nice": int,
    "ProcessType": str,
    "AbandonProcessGroup": bool,
    "LowPriorityIO": bool,
    "LowPriorityBackgroundIO": bool,
    "LaunchOnlyOnce": bool,
    "MachServices": dict,
    "Sockets": dict,
    "AssociatedBundleIdentifiers": (str, list),
}
KEEPALIVE_KEYS = {"SuccessfulExit", "NetworkState", "PathState", "OtherJobEnabled", "Crashed"}
PROCESS_TYPES = {"Background", "Standard", "Adaptive", "Interactive"}


def build(tmp_path: Path, platform: str, **env: str) -> service_units.Service:
    return service.build(platform=platform, env=env, user_home=tmp_path, program=[SV])


def test_the_systemd_unit_runs_this_sessionvault_with_the_state_folder_and_port(tmp_path: Path) -> None:
    s = build(tmp_path, "linux", SESSIONVAULT_HOME="/data/sv", SESSIONVAULT_PORT="9001")
    unit = s.text()
    assert s.path == tmp_path / ".config/systemd/user/sessionvault.service"
    assert f'ExecStart="{SV}" "dev" "--port" "9001"' in unit.splitlines()
    for line in (
        'Environment="SESSIONVAULT_HOME=/data/sv"',
        'Environment="SESSIONVAULT_PORT=9001"',
        "Restart=on-failure",
        "RestartPreventExitStatus=2",
        "WantedBy=default.target",
    ):
        assert line in unit.splitlines()
    assert unit.index("[Unit]") < unit.index("[Service]") < unit.index("[Install]")


def test_the_default_state_folder_and_port_and_a_flag_over_the_environment(tmp_path: Path) -> None:
    s = build(tmp_path, "linux")
    assert s.state == tmp_path / ".sessionvault" and s.port == 8765
    assert s.env["SESSIONVAULT_HOME"] == str(tmp_path / ".sessionvault")
    flagged = service.build(
        port=9100, platform="linux", env={"SESSIONVAULT_PORT": "9001"}, user_home=tmp_path, program=[SV]
    )
    assert flagged.argv[-2:] == ["--port", "9100"] and flagged.env["SESSIONVAULT_PORT"] == "9100"


def test_the_port_of_config_toml_in_the_state_folder_goes_into_the_unit(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text("port = 9444\n")
    s = build(tmp_path, "linux", SESSIONVAULT_HOME=str(state))
    assert s.port == 9444 and s.argv[-2:] == ["--port", "9444"]
    assert 'Environment="SESSIONVAULT_PORT=9444"' in s.text().splitlines()
    assert "127.0.0.1:9444" in s.text()
    over = build(tmp_path, "linux", SESSIONVAULT_HOME=str(state), SESSIONVAULT_PORT="9445")
    assert over.port == 9445  # the environment over the file


def test_status_names_a_missing_state_folder_and_creates_nothing(tmp_path: Path) -> None:
    s = build(tmp_path, "linux", SESSIONVAULT_HOME=str(tmp_path / "typo"))
    said: list[str] = []
    assert service.status(s, out=said.append) == 4
    assert said[0].startswith(f"no SessionVault state in {tmp_path / 'typo'} (the service makes it")
    assert not (tmp_path / "typo").exists()


def test_an_external_database_is_served_with_serve_and_client_settings_stay_out(tmp_path: Path) -> None:
    s = build(
        tmp_path,
        "linux",
        DATABASE_URL="postgresql://app:p%40ss@db/sv",
        SESSIONVAULT_API_KEY="sv_live_secret",
        SESSIONVAULT_URL="http://x/mcp",
        SESSIONVAULT_MASTER_KEY_FILE="/keys/master.key",
    )
    unit = s.text()
    assert s.argv[1] == "serve"
    assert 'Environment="DATABASE_URL=postgresql://app:p%%40ss@db/sv"' in unit  # % is a specifier
    assert "SESSIONVAULT_MASTER_KEY_FILE=/keys/master.key" in unit
    assert "sv_live_secret" not in unit and "SESSIONVAULT_URL" not in unit


def test_exec_start_words_are_quoted_for_systemd(tmp_path: Path) -> None:
    s = service.build(
        platform="linux", env={}, user_home=tmp_path, program=['/opt/my "sv" 100%/$bin/sessionvault']
    )
    line = next(x for x in s.text().splitlines() if x.startswith("ExecStart="))
    assert line.startswith('ExecStart="/opt/my \\"sv\\" 100%%/$$bin/sessionvault" "dev"')
    with pytest.raises(ConfigError, match="absolute"):
        service.build(platform="linux", env={}, user_home=tmp_path, program=["sessionvault"])
    with pytest.raises(ConfigError, match="line break"):
        build(tmp_path, "linux", SESSIONVAULT_PUBLIC_URL="a\nb").text()


def test_the_launchd_agent_has_launchds_keys_and_types(tmp_path: Path) -> None:
    s = build(tmp_path, "darwin", SESSIONVAULT_HOME="/Users/me/sv", SESSIONVAULT_PORT="9002")
    assert s.path == tmp_path / "Library/LaunchAgents/dev.sessionvault.plist"
    agent = plistlib.loads(s.text().encode())
    for key, value in agent.items():
        assert key in LAUNCHD_KEYS, f"{key} is no launchd key"
        assert isinstance(value, LAUNCHD_KEYS[key]), key
    assert agent["Label"] == "dev.sessionvault"
    assert agent["ProgramArguments"] == [SV, "dev", "--port", "9002"]
    assert agent["RunAtLoad"] is True
    assert set(agent["KeepAlive"]) <= KEEPALIVE_KEYS and agent["KeepAlive"]["SuccessfulExit"] is False
    assert agent["ProcessType"] in PROCESS_TYPES
    logs = tmp_path / "Library/Logs/SessionVault"
    assert Path(agent["StandardOutPath"]).parent == logs and Path(agent["StandardErrorPath"]).parent == logs
    assert agent["EnvironmentVariables"]["SESSIONVAULT_HOME"] == "/Users/me/sv"
    assert all(isinstance(v, str) for v in agent["EnvironmentVariables"].values())
    assert all(isinstance(v, str) for v in agent["ProgramArguments"])


class FakeCommands:
    def __init__(self, answers: dict[str, int] | None = None) -> None:
        self.ran: list[list[str]] = []
        self.answers = answers or {}

    def __call__(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.ran.append(list(argv))
        code = self.answers.get(" ".join(argv[2:3]), 0)
        return subprocess.CompletedProcess(list(argv), code, "", "Failed to connect to bus" if code else "")


def test_install_without_a_user_systemd_writes_the_unit_and_prints_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "user_systemd", lambda runner=None: "the system does not run systemd")
    said: list[str] = []
    s, fake = build(tmp_path, "linux"), FakeCommands()
    assert service.install(s, runner=fake, out=said.append) == 0
    assert s.path.read_text() == s.text()
    assert stat.S_IMODE(s.path.stat().st_mode) == 0o600  # it may hold DATABASE_URL's password
    assert fake.ran == []
    text = "\n".join(said)
    assert (
        str(s.path) in text
        and "systemctl --user daemon-reload && systemctl --user enable --now sessionvault.service" in text
    )
    assert service.status(s, runner=fake, out=said.append) == 3
    assert service.uninstall(s, runner=fake, out=said.append) == 0 and not s.path.exists()
    assert service.status(s, runner=fake, out=said.append) == 4


def test_install_with_a_user_systemd_reloads_enables_and_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "user_systemd", lambda runner=None: None)
    said: list[str] = []
    s, fake = build(tmp_path, "linux"), FakeCommands()
    assert service.install(s, runner=fake, out=said.append) == 0
    assert fake.ran == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", "sessionvault.service"],
        ["systemctl", "--user", "restart", "sessionvault.service"],
    ]
    failing = FakeCommands({"enable": 1})
    assert service.install(s, runner=failing, out=said.append) == 1
    assert "Failed to connect to bus" in said[-1]


def test_user_systemd_says_why_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sessionvault.local.host.service.shutil.which", lambda name: None)
    assert service.user_systemd(FakeCommands()) == "systemctl is not installed"


def test_logs_read_the_journal_or_the_launchd_log_files(tmp_path: Path) -> None:
    assert service.logs_argv(build(tmp_path, "linux"), follow=True, lines=5) == [
        "journalctl",
        "--user",
        "-u",
        "sessionvault.service",
        "--no-pager",
        "-n",
        "5",
        "-f",
    ]
    mac = service.logs_argv(build(tmp_path, "darwin"))
    assert mac[0] == "tail" and mac[-1].startswith(str(tmp_path / "Library/Logs/SessionVault"))


def test_an_unknown_platform_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"Linux .* and macOS"):
        build(tmp_path, "win32")


def test_install_says_when_the_server_running_from_the_state_folder_serves_on_another_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "user_systemd", lambda runner=None: "the system does not run systemd")
    s = build(tmp_path, "linux")
    s.state.mkdir(parents=True, exist_ok=True)
    serving = {"url": f"http://127.0.0.1:{s.port + 1}/mcp", "pid": os.getpid()}  # a live process
    (s.state / config.SERVING_FILE).write_text(json.dumps(serving))
    said: list[str] = []
    assert service.install(s, runner=FakeCommands(), out=said.append) == 0
    note = next(line for line in said if "note:" in line)
    assert f"serves on port {s.port + 1}, not {s.port}" in note and f"--port {s.port + 1}" in note

    (s.state / config.SERVING_FILE).write_text(
        json.dumps({**serving, "url": f"http://127.0.0.1:{s.port}/mcp"})
    )
    said.clear()
    service.install(s, runner=FakeCommands(), out=said.append)
    assert any("a server already runs from this state folder" in line for line in said)
