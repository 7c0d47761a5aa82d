"""`sessionvault service install|uninstall|status|logs`: the server as a background service of
the user's session, the way the OS runs one.

Linux: a systemd user unit (~/.config/systemd/user/sessionvault.service), started at login
(WantedBy=default.target), restarted on failure, logs in the journal (`journalctl --user -u`).
macOS: a launchd agent (~/Library/LaunchAgents/dev.sessionvault.plist), RunAtLoad, KeepAlive
on failure, logs under ~/Library/Logs/SessionVault.

The service runs this very `sessionvault` (by its absolute path) with `dev` for the embedded
default (it creates the local user on a first start) or `serve` when DATABASE_URL is set, with
the state folder and port of the configuration `install` ran in (`local/config.py`: flag, then
environment, then the state folder's config.toml, which the service itself reads too) and the
other SESSIONVAULT_* / DATABASE_* settings of that environment. The file may hold secrets from
that environment: it is written 0600."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from sessionvault.errors import ConfigError
from sessionvault.local import config
from sessionvault.local.host import command
from sessionvault.local.host.service_units import LABEL, UNIT, Service
from sessionvault.names import HOME_ENV, KEY_ENV, PORT_ENV, URL_ENV

# Client-side settings: the server has no use for them (and the key is a secret).
CLIENT_ONLY = {KEY_ENV, URL_ENV}

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)


def platform_name(platform: str | None = None) -> str:
    name = (platform or sys.platform).lower()
    if name.startswith("linux"):
        return "linux"
    if name in ("darwin", "macos", "mac"):
        return "darwin"
    raise ConfigError(
        f"no background service for platform {name!r}: Linux (systemd) and macOS (launchd) only"
    )


def build(
    *,
    port: int | None = None,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    user_home: Path | None = None,
    program: Sequence[str] | None = None,
) -> Service:
    """The service for this environment: its configuration's state folder and port (`--port`,
    else $SESSIONVAULT_PORT, else config.toml's, else the default) and its server settings."""
    env = dict(os.environ if env is None else env)
    user_home = (user_home or Path.home()).absolute()
    cfg = config.load(env, user_home=user_home, flags={"port": port})
    state, port = cfg.state.absolute(), cfg.port
    external = bool(env.get("DATABASE_URL"))
    settings = {
        k: v
        for k, v in sorted(env.items())
        if k.startswith(("SESSIONVAULT_", "DATABASE_")) and k not in CLIENT_ONLY and k != HOME_ENV
    }
    settings.update({HOME_ENV: str(state), PORT_ENV: str(port), "PYTHONUNBUFFERED": "1"})
    if env.get("OPENAI_API_KEY"):
        settings["OPENAI_API_KEY"] = env["OPENAI_API_KEY"]  # the embedded default's embeddings
    argv = [*(program or command.sessionvault_argv()), "serve" if external else "dev", "--port", str(port)]
    if not os.path.isabs(argv[0]):
        raise ConfigError(f"the service needs an absolute path to sessionvault, not {argv[0]!r}")
    return Service(platform_name(platform), argv, settings, user_home, port, state, external)


def user_systemd(runner: Runner = run) -> str | None:
    """None when a user systemd answers here, else why not (no systemctl, no user manager:
    a container, an ssh session without lingering)."""
    if not shutil.which("systemctl"):
        return "systemctl is not installed"
    if not Path("/run/systemd/system").is_dir():
        return "the system does not run systemd (a container?)"
    try:
        done = runner(["systemctl", "--user", "show-environment"])
    except (OSError, subprocess.SubprocessError) as exc:
        return f"systemctl --user cannot run ({exc})"
    if done.returncode != 0:
        reason = " ".join((done.stderr or done.stdout).split()) or f"exit {done.returncode}"
        return f"no user systemd is reachable ({reason})"
    return None


# ---------------------------------------------------------------- the commands


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    aside.unlink(missing_ok=True)
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # may hold secrets
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(aside, path)


def _shown(argv: Sequence[str]) -> str:
    return shlex.join(argv)


def _systemctl(args: Sequence[str], runner: Runner, out: Callable[[str], None]) -> bool:
    argv = ["systemctl", "--user", *args]
    done = runner(argv)
    if done.returncode != 0:
        out(f"{_shown(argv)} failed: {' '.join((done.stderr or done.stdout).split())}")
        return False
    return True


def install(s: Service, *, runner: Runner = run, out: Callable[[str], None] = print) -> int:
    _write(s.path, s.text())
    out(f"wrote {s.path}")
    out(f"  runs: {_shown(s.argv)}")
    out(f"  state folder {s.state}, port {s.port}")
    running = config.serving_port(s.state)
    if running is not None and running != s.port:
        out(
            f"  note: the server running now from this state folder serves on port {running}, not {s.port}:"
            f" clients set up against it keep its address only with --port {running};"
            " the service starts once that server stops (one server per state folder)"
        )
    elif running is not None:
        out(
            "  note: a server already runs from this state folder: if it is not this service, stop it"
            " (Ctrl-C); the service starts once it has stopped (one server per state folder)"
        )
    if s.platform == "darwin":
        s.log_dir.mkdir(parents=True, exist_ok=True)
        load = ["launchctl", "bootstrap", f"gui/{os.getuid()}", str(s.path)]
        if sys.platform != "darwin":
            out(f"not on macOS: on the Mac, run  {_shown(load)}")
            return 0
        runner(["launchctl", "bootout", f"gui/{os.getuid()}/{LABEL}"])  # a previous version, if loaded
        done = runner(load)
        if done.returncode != 0:
            out(f"{_shown(load)} failed: {' '.join((done.stderr or done.stdout).split())}")
            return 1
        out(f"started; logs in {s.log_dir} (sessionvault service logs)")
        return 0
    why_not = user_systemd(runner)
    if why_not:
        out(f"not started: {why_not}. Where a user systemd runs, start it with:")
        out(f"  systemctl --user daemon-reload && systemctl --user enable --now {UNIT}")
        return 0
    if not (
        _systemctl(["daemon-reload"], runner, out) and _systemctl(["enable", "--now", UNIT], runner, out)
    ):
        return 1
    # `restart`: an install over a running service picks up the new unit.
    if not _systemctl(["restart", UNIT], runner, out):
        return 1
    out(f"started and enabled at login; logs: sessionvault service logs (journalctl --user -u {UNIT})")
    if not s.external_database:
        out("on its first start the server creates the local user; its key is in those logs")
    return 0


def uninstall(s: Service, *, runner: Runner = run, out: Callable[[str], None] = print) -> int:
    if s.platform == "darwin":
        if sys.platform == "darwin":
            runner(["launchctl", "bootout", f"gui/{os.getuid()}/{LABEL}"])
    elif user_systemd(runner) is None:
        _systemctl(["disable", "--now", UNIT], runner, out)
    if s.path.exists():
        s.path.unlink()
        out(f"removed {s.path}")
    else:
        out(f"no service installed ({s.path} does not exist)")
    if s.platform == "linux" and user_systemd(runner) is None:
        _systemctl(["daemon-reload"], runner, out)
    return 0


def status(s: Service, *, runner: Runner = run, out: Callable[[str], None] = print) -> int:
    """0 when the service is installed and running, 3 when installed and not running (as
    `systemctl status`) or its state folder holds no state, 4 when not installed. Creates
    nothing."""
    has_state = s.external_database or config.has_state(s.state)
    if not s.external_database and has_state:
        out(f"state folder: {s.state}")
    elif not has_state:
        out(
            f"no SessionVault state in {s.state} (the service makes it on its first start; set"
            f" {HOME_ENV} to the folder your server uses, or run `sessionvault dev` first)"
        )
    if not s.path.exists():
        out(f"not installed ({s.path} does not exist): sessionvault service install")
        return 4
    out(f"installed: {s.path}")
    code = _running(s, runner, out)
    return code if has_state else max(code, 3)


def _running(s: Service, runner: Runner, out: Callable[[str], None]) -> int:
    if s.platform == "darwin":
        if sys.platform != "darwin":
            out("not on macOS: launchctl cannot be asked here")
            return 3
        done = runner(["launchctl", "print", f"gui/{os.getuid()}/{LABEL}"])
        out(done.stdout.strip() or done.stderr.strip())
        return 0 if done.returncode == 0 and "state = running" in done.stdout else 3
    why_not = user_systemd(runner)
    if why_not:
        out(f"cannot ask systemd: {why_not}")
        return 3
    done = runner(["systemctl", "--user", "status", "--no-pager", UNIT])
    out(done.stdout.rstrip())
    return 0 if done.returncode == 0 else 3


def logs_argv(s: Service, *, follow: bool = False, lines: int = 100) -> list[str]:
    if s.platform == "darwin":
        files = [str(s.log_dir / "sessionvault.log"), str(s.log_dir / "sessionvault.err.log")]
        return ["tail", "-n", str(lines), *(["-F"] if follow else []), *files]
    return ["journalctl", "--user", "-u", UNIT, "--no-pager", "-n", str(lines), *(["-f"] if follow else [])]


def logs(s: Service, *, follow: bool = False, lines: int = 100) -> int:
    argv = logs_argv(s, follow=follow, lines=lines)
    if not shutil.which(argv[0]):
        raise ConfigError(f"{argv[0]} is not installed here: the logs are read with  {_shown(argv)}")
    return subprocess.call(argv)  # the user's terminal: output as it comes
