"""Which database a command on this machine talks to: DATABASE_URL when it is set, else the
embedded default (started on demand). Settings come from `Settings.from_env` either way; the
embedded database only supplies its URLs, the master-key file and the audit salt."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sessionvault.errors import ConfigError
from sessionvault.settings import Settings, default_home

if TYPE_CHECKING:
    from sessionvault.runtime import Runtime


@dataclass(frozen=True)
class Target:
    settings: Settings  # the server's: database_url is the app role's
    owner_url: str = field(repr=False)  # migrations; URLs may hold passwords
    admin_url: str = field(repr=False)  # user, key and maintenance commands
    home: Path | None = None  # the embedded default's state folder


def embedded_target(home: Path, env: Mapping[str, str] | None = None) -> Target:
    """The embedded default: state folder, local key provider, local embeddings."""
    from sessionvault.local import embedded
    from sessionvault.local.secretfile import load_or_create_master_key

    env = dict(os.environ if env is None else env)
    db = embedded.start(home)
    load_or_create_master_key(db.master_key_file)
    default_embeddings = "openai" if env.get("OPENAI_API_KEY") else "local"
    settings = Settings.from_env(
        env,
        database_url=db.app_url,
        key_provider="local",
        master_key="",
        master_key_file=db.master_key_file,
        audit_salt=db.audit_salt,
        embeddings=env.get("SESSIONVAULT_EMBEDDINGS") or default_embeddings,
    )
    return Target(settings, db.owner_url, db.admin_url, home)


def current() -> Target:
    if os.environ.get("DATABASE_URL"):
        url = os.environ["DATABASE_URL"]
        owner = os.environ.get("DATABASE_OWNER_URL", url)
        return Target(Settings.from_env(), owner, os.environ.get("DATABASE_ADMIN_URL", ""))
    return embedded_target(default_home())


def owner_url() -> str:
    """Migrations need only the owner's URL: no keys, no settings."""
    url = os.environ.get("DATABASE_OWNER_URL") or os.environ.get("DATABASE_URL")
    return url or embedded_target(default_home()).owner_url


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

    try:
        identity.resolve_user(rt.db, name)
        return None
    except AccountError:
        user_id = identity.create_user(rt.db, rt.keys.provider, name)
    return identity.create_key(rt.db, user_id, label, ("read", "write", "delete"))[0]
