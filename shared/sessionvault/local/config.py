"""The one local configuration: `config.toml` in the state folder, read by every command on
this machine (`dev`, `serve`, `doctor`, `hook`, `bridge`, `connect`, `service install`, ...).

Each option is taken from the first of: the command-line flag, its environment variable, the
file, the default; every value remembers which (`sessionvault config show` prints it). The state
folder itself cannot be configured in the file that lives inside it: it is $SESSIONVAULT_HOME,
else ~/.sessionvault. A malformed file, an unknown key or a wrong type is a ConfigError naming
the file, the key and what is expected (the CLI exits 2), never a traceback.

Light (tomllib, no third-party import): the session-start hook reads it on every client start."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from sessionvault.errors import ConfigError
from sessionvault.names import DEFAULT_HOST, DEFAULT_PORT, HOME_ENV, PORT_ENV, URL_ENV
from sessionvault.settings import Settings

FILE = "config.toml"
DEFAULT = "default"
Scalar = int | str | bool
_ON = frozenset({"1", "on", "true", "yes"})
_OFF = frozenset({"0", "off", "false", "no"})


def _port(value: Scalar) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536


def _positive(value: Scalar) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _embedder(value: Scalar) -> bool:
    return value in ("local", "openai", "none")


def _url(value: Scalar) -> bool:
    parts = urlsplit(value) if isinstance(value, str) else None
    return parts is not None and parts.scheme in ("http", "https") and bool(parts.netloc)


@dataclass(frozen=True)
class Option:
    env: str
    kind: type  # what the environment variable's text is read as
    expected: str  # for the error message: what a value must be
    valid: Callable[[Scalar], bool]


OPTIONS: dict[str, Option] = {
    "port": Option(PORT_ENV, int, "a port number (1-65535)", _port),
    "url": Option(URL_ENV, str, 'an http(s) URL, e.g. "https://sv.example.com/mcp"', _url),
    "embeddings": Option("SESSIONVAULT_EMBEDDINGS", str, '"local", "openai" or "none"', _embedder),
    "rate_per_minute": Option("SESSIONVAULT_RATE_PER_MINUTE", int, "a whole number above 0", _positive),
    "rate_per_day": Option("SESSIONVAULT_RATE_PER_DAY", int, "a whole number above 0", _positive),
    "capture": Option("SESSIONVAULT_CAPTURE", bool, "true or false", lambda v: isinstance(v, bool)),
}
_DEFAULTS: dict[str, Scalar] = {  # embeddings' depends on the environment: `_default`
    "port": DEFAULT_PORT,
    "url": "",  # none: the local server on `port` (`Config.url`)
    "rate_per_minute": Settings.rate_per_minute,  # the server's own defaults, defined there once
    "rate_per_day": Settings.rate_per_day,
    "capture": True,
}
SERVER_OPTIONS = ("embeddings", "rate_per_minute", "rate_per_day")  # what Settings.from_env reads
# --url's default, for the help of the commands that take one (`Config.url`, `target.server_url`).
URL_HELP = f"${URL_ENV}, else config.toml's url, else the local server on the configured port"
SERVER_URL_HELP = f"${URL_ENV}, else config.toml's url, else the deployed stack's, else the local server"


@dataclass(frozen=True)
class Value:
    value: Scalar
    source: str  # "--port", "$SESSIONVAULT_PORT", the file's path, or "default"

    @property
    def explicit(self) -> bool:
        return self.source != DEFAULT and not self.source.startswith(DEFAULT + " ")


@dataclass(frozen=True)
class Config:
    state: Path  # the state folder
    state_source: str  # "$SESSIONVAULT_HOME" or "default"
    env: Mapping[str, str]
    values: Mapping[str, Value]

    @property
    def file(self) -> Path:
        return self.state / FILE

    @property
    def port(self) -> int:
        return int(self.values["port"].value)

    @property
    def local_url(self) -> str:
        """The local server's MCP endpoint: on the configured port when one is given (flag,
        variable, file), else where the server running from this state folder serves (`make
        dev PORT=N` is found), else on the default port."""
        if not self.values["port"].explicit and (running := serving_url(self.state)):
            return running
        return f"http://{DEFAULT_HOST}:{self.port}/mcp"

    @property
    def url(self) -> str:
        """The configured URL (flag, $SESSIONVAULT_URL, the file), else the local server's.
        The deployed stack's URL is `target.server_url`'s business: only commands that may
        send its saved key there use it."""
        given = self.values["url"]
        return str(given.value) if given.explicit else self.local_url

    def server_env(self) -> dict[str, str]:
        """The environment for `Settings.from_env`, with the effective server options in it."""
        env = dict(self.env)
        for name in SERVER_OPTIONS:
            env[OPTIONS[name].env] = str(self.values[name].value)
        return env


SERVING_FILE = "server.json"  # where the running server serves: written by local/host/statelock.py


def serving_port(state: Path) -> int | None:
    """The port of the server running from `state` (serving_url's), or None."""
    url = serving_url(state)
    return urlsplit(url).port if url else None


def serving_url(state: Path) -> str:
    """The URL the server running from `state` recorded, or "" (none, or its process is gone)."""
    try:
        record = json.loads((state / SERVING_FILE).read_text())
        url, pid = str(record["url"]), int(record["pid"])
    except (OSError, ValueError, TypeError, KeyError):
        return ""
    try:
        os.kill(pid, 0)  # signal 0: is it alive? (a crash leaves the file behind)
    except PermissionError:
        return url  # alive, another user's
    except OSError:
        return ""
    return url


def state_folder(env: Mapping[str, str], user_home: Path | None = None) -> Path:
    return Path(env.get(HOME_ENV) or (user_home or Path.home()) / ".sessionvault").expanduser()


def load(
    env: Mapping[str, str] | None = None,
    *,
    user_home: Path | None = None,
    state: Path | None = None,
    flags: Mapping[str, Scalar | None] | None = None,
) -> Config:
    """The configuration for `env` (default: this process's): `flags` are the command line's
    (None: not given); `state` overrides the state folder `env` names."""
    env = dict(os.environ if env is None else env)
    folder = state or state_folder(env, user_home)
    source = "$" + HOME_ENV if env.get(HOME_ENV) else DEFAULT
    from_file = read_file(folder / FILE)
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    values = {name: _resolve(name, given, env, from_file, folder / FILE) for name in OPTIONS}
    return Config(folder, source, env, values)


def _resolve(
    name: str,
    flags: Mapping[str, Scalar],
    env: Mapping[str, str],
    from_file: Mapping[str, Scalar],
    path: Path,
) -> Value:
    option = OPTIONS[name]
    if name in flags:
        flag = f"--{name.replace('_', '-')}"
        if not option.valid(flags[name]):
            raise ConfigError(f"{flag} must be {option.expected}, not {flags[name]!r}")
        return Value(flags[name], flag)
    raw = env.get(option.env, "").strip()
    if raw:
        return Value(_from_env(option, raw), "$" + option.env)
    if name in from_file:
        return Value(from_file[name], str(path))
    return _default(name, env)


def _from_env(option: Option, raw: str) -> Scalar:
    value: Scalar | None = raw
    if option.kind is int:
        value = int(raw) if raw.lstrip("-").isdigit() else None
    elif option.kind is bool:
        value = True if raw.lower() in _ON else False if raw.lower() in _OFF else None
    if value is None or not option.valid(value):
        shown = "on or off" if option.kind is bool else option.expected
        raise ConfigError(f"${option.env} must be {shown}, not {raw!r}")
    return value


def _default(name: str, env: Mapping[str, str]) -> Value:
    if name == "embeddings":
        # As before the file existed: another database's server embeds nothing unless told;
        # the embedded default uses OpenAI when a key is there, else the local model.
        if env.get("DATABASE_URL"):
            return Value("none", "default (DATABASE_URL is set)")
        if env.get("OPENAI_API_KEY"):
            return Value("openai", "default (OPENAI_API_KEY is set)")
        return Value("local", DEFAULT)
    return Value(_DEFAULTS[name], DEFAULT)


def read_file(path: Path) -> dict[str, Scalar]:
    """The file's options, every one checked; {} when there is no file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    return {key: _checked(path, key, value) for key, value in data.items()}


def _checked(path: Path, key: str, value: object) -> Scalar:
    option = OPTIONS.get(key)
    if option is None:
        raise ConfigError(f"{path}: unknown key {key!r}; the keys are {', '.join(OPTIONS)}")
    if not isinstance(value, int | str | bool) or not option.valid(value):
        raise ConfigError(f"{path}: {key} must be {option.expected}, not {shown(value)}")
    return value


def shown(value: object) -> str:
    """A value as the file spells it (for `config show` and messages): true, 8765, "text"."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return f'"{value}"' if isinstance(value, str) else str(value)


# ---------------------------------------------------------------- the state folder


def has_state(home: Path) -> bool:
    """Whether `home` holds an embedded database (what `sessionvault dev` makes)."""
    return (home / "pgdata").is_dir()


def no_state(cfg: Config) -> str:
    """ "" when the state folder holds a state; else which folder was looked in, why that one,
    and what to do. Creates nothing."""
    if has_state(cfg.state):
        return ""
    why = f"from ${HOME_ENV}" if cfg.state_source != DEFAULT else f"the default; ${HOME_ENV} is not set"
    what = "holds no database (pgdata/)" if cfg.state.is_dir() else "does not exist"
    return (
        f"no SessionVault state in {cfg.state} ({why}): the folder {what}. Set {HOME_ENV} to the"
        " folder your server uses, or start one there with `sessionvault dev`"
    )
