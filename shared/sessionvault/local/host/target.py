"""Which database a command on this machine talks to: DATABASE_URL when it is set, else the
embedded default (started on demand). Settings come from `Settings.from_env` either way, over
the environment with the local configuration's server options in it (`config.server_env`);
the embedded database only supplies its URLs, the master-key file and the audit salt;
`check_database` says, before a server starts, whether that database answers.

And which server the laptop-side commands (`connect`, `doctor`) talk to: `--url`, else
$SESSIONVAULT_URL, else config.toml's url, else the stack `sessionvault deploy` saved here,
else the local server on the configured port; the key likewise: `--key`, else
$SESSIONVAULT_API_KEY, else the deployment's 0600 key file."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sessionvault.errors import ConfigError
from sessionvault.local import config
from sessionvault.local.config import Config
from sessionvault.names import KEY_ENV
from sessionvault.settings import Settings

if TYPE_CHECKING:
    from sessionvault.runtime import Runtime


@dataclass(frozen=True)
class Target:
    settings: Settings  # the server's: database_url is the app role's
    owner_url: str = field(repr=False)  # migrations; URLs may hold passwords
    admin_url: str = field(repr=False)  # user, key and maintenance commands
    home: Path | None = None  # the embedded default's state folder


def embedded_target(cfg: Config) -> Target:
    """The embedded default in `cfg`'s state folder: local key provider, the configured
    embeddings (the local model unless told otherwise)."""
    from sessionvault.local.host import embedded
    from sessionvault.local.host.secretfile import load_or_create_master_key

    db = embedded.start(cfg.state)
    load_or_create_master_key(db.master_key_file)
    settings = Settings.from_env(
        cfg.server_env(),
        database_url=db.app_url,
        key_provider="local",
        master_key="",
        master_key_file=db.master_key_file,
        audit_salt=db.audit_salt,
    )
    return Target(settings, db.owner_url, db.admin_url, cfg.state)


def current(*, create: bool = True, cfg: Config | None = None) -> Target:
    """DATABASE_URL's target, else the embedded default's. `create=False` (read-only commands:
    `key list`, `user list`) never makes a new state folder: a missing one is an error naming
    the folder looked in, not an empty answer from a fresh database."""
    cfg = cfg or config.load()
    env = cfg.env
    if env.get("DATABASE_URL"):
        url = env["DATABASE_URL"]
        owner = env.get("DATABASE_OWNER_URL", url)
        return Target(Settings.from_env(cfg.server_env()), owner, env.get("DATABASE_ADMIN_URL", ""))
    if not create:
        require_state(cfg)
    return embedded_target(cfg)


has_state = config.has_state


def require_state(cfg: Config) -> Path:
    """The state folder when it holds a state; else ConfigError saying which folder was looked
    in and why that one. Creates nothing."""
    problem = config.no_state(cfg)
    if problem:
        raise ConfigError(problem)
    return cfg.state


def owner_url() -> str:
    """Migrations need only the owner's URL: no keys, no settings."""
    url = os.environ.get("DATABASE_OWNER_URL") or os.environ.get("DATABASE_URL")
    return url or embedded_target(config.load()).owner_url


@contextmanager
def admin_runtime(t: Target) -> Iterator[Runtime]:
    """A runtime on the admin role: every command that uses it manages users, keys or rows."""
    from sessionvault.runtime import open_runtime

    if not t.admin_url:
        raise ConfigError("user and key commands need DATABASE_ADMIN_URL (the sessionvault_admin role)")
    rt = open_runtime(replace(t.settings, database_url=t.admin_url), pool_size=2)
    try:
        yield rt
    finally:
        rt.close()


def ensure_user(rt: Runtime, name: str, label: str) -> str | None:
    """Create the user with one key unless it exists; the new key (shown once), else None."""
    from sessionvault.db import identity
    from sessionvault.errors import AccountError
    from sessionvault.service import accounts

    try:
        identity.resolve_user(rt.db, name)
        return None
    except AccountError:
        user_id = accounts.create_user(rt.db, rt.keys.provider, name)
    return accounts.create_key(rt.db, user_id, label, ("read", "write", "delete"))[0]


def ensure_hook_key(rt: Runtime, name: str, home: Path, url: str) -> Path | None:
    """Give the hooks of this machine a key of their own for `url` (the `checkpoint` scope,
    local/hook/hook_key.py) unless they have one: the new file, else None. Existing users get
    it on their next `make dev`, so their installed hooks go on saving checkpoints."""
    from sessionvault.core import apikeys
    from sessionvault.db import identity
    from sessionvault.local.hook import hook_key
    from sessionvault.service import accounts

    saved = hook_key.saved(home, url)
    if saved and identity.live_key_owner(rt.db, apikeys.digest(saved)):
        return None
    key, _ = accounts.create_key(rt.db, identity.resolve_user(rt.db, name), "hooks", apikeys.HOOK_SCOPES)
    return hook_key.save(home, url, key)


# ---------------------------------------------------------------- the deployed server

DEPLOYMENT_FILE = "deployment.json"  # URL, stack, region: no secret
DEPLOYMENT_KEY_FILE = "deployment.key"  # the first API key, 0600 like master.key


@dataclass(frozen=True)
class Deployment:
    """The stack `sessionvault deploy` last deployed from this machine."""

    url: str
    stack: str
    region: str
    admin_function: str = ""
    user: str = ""


def state_folder(env: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """The state folder for an environment and home folder (both this process's by default)."""
    return config.state_folder(os.environ if env is None else env, home)


def saved_deployment(state: Path) -> Deployment | None:
    try:
        data = json.loads((state / DEPLOYMENT_FILE).read_text())
        return Deployment(**{k: str(data[k]) for k in Deployment.__dataclass_fields__ if k in data})
    except (OSError, ValueError, TypeError):
        return None  # none saved (or unreadable): the local defaults apply


def deployed_key(state: Path) -> str:
    try:
        return (state / DEPLOYMENT_KEY_FILE).read_text().strip()
    except OSError:
        return ""


def save_deployment(state: Path, deployment: Deployment, key: str | None) -> None:
    """Write the deployment, and the key when a new one was made (None keeps the saved key)."""
    _write(state / DEPLOYMENT_FILE, json.dumps(deployment.__dict__, indent=2) + "\n", 0o644)
    if key is not None:
        _write(state / DEPLOYMENT_KEY_FILE, key + "\n", 0o600)


def _write(path: Path, text: str, mode: int) -> None:
    """Whole or not at all, and never readable by others for a moment: written aside with its
    mode set before any byte, then renamed over the old file."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    aside = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    aside.unlink(missing_ok=True)  # a leftover keeps its own mode: never reuse it
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(aside, path)


def server_url(cfg: Config) -> config.Value:
    """The configured URL (flag, $SESSIONVAULT_URL, config.toml), else the saved deployment's,
    else the local server's: where the one running from the state folder serves unless a port
    is configured, else on the configured port; with where it came from."""
    given = cfg.values["url"]
    if given.explicit:
        return given
    deployment = saved_deployment(cfg.state)
    if deployment and deployment.url:
        return config.Value(deployment.url, str(cfg.state / DEPLOYMENT_FILE))
    port = cfg.values["port"]
    if not port.explicit and (running := config.serving_url(cfg.state)):
        return config.Value(running, f"the running server ({cfg.state / config.SERVING_FILE})")
    return config.Value(cfg.local_url, f"the local server at the port ({port.source})")


def default_url(env: Mapping[str, str], state: Path) -> str:
    """`server_url` for the configuration of `env` and `state`."""
    return str(server_url(config.load(env, state=state)).value)


def default_key(env: Mapping[str, str], state: Path, url: str) -> tuple[str, str]:
    """The API key and where it came from: $SESSIONVAULT_API_KEY, else the deployment's key
    file, but only for the deployment's own URL (a key never goes to a server it was not made
    for), else ("", "")."""
    key = env.get(KEY_ENV, "").strip()
    if key:
        return key, KEY_ENV
    deployment = saved_deployment(state)
    if deployment is not None and deployment.url.rstrip("/") == url.strip().rstrip("/"):
        key = deployed_key(state)
        if key:
            return key, str(state / DEPLOYMENT_KEY_FILE)
    return "", ""


DB_CONNECT_TIMEOUT_S = 4  # per address tried: an unreachable database is named within 10 s


def check_database(url: str, timeout_s: int = DB_CONNECT_TIMEOUT_S) -> None:
    """Connect once before anything is printed: ConfigError naming the host and the reason
    when the database cannot be reached (the pool would retry in the background forever)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"DATABASE_URL is not a valid connection string: {exc}") from None
    host = str(params.get("host") or params.get("hostaddr") or "localhost")
    where = f"{host}:{params.get('port') or 5432}" if not host.startswith("/") else host
    try:
        psycopg.connect(url, connect_timeout=timeout_s, autocommit=True).close()
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ConfigError(f"cannot reach the database at {where}: {reason[:400]}") from None
