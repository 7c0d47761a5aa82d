"""Settings, built in one place (`Settings.from_env`). Where values come from is the only
difference between the modes: the environment everywhere, plus Secrets Manager inside Lambda
(`from_lambda`) or the embedded database's state folder on a laptop (`sessionvault.local`).
A missing or placeholder value stops the start."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from sessionvault.errors import ConfigError
from sessionvault.names import HOME_ENV

# Whole values (or their obvious stems) only: a random key or salt must never match by chance.
_PLACEHOLDER_STEMS = ("change_me", "changeme", "change-me", "placeholder", "replace_me", "replace-me")
_PLACEHOLDER_VALUES = {"todo", "tbd", "secret", "password", "none", "null", "example", "test"}


def is_placeholder(value: str) -> bool:
    """True for values that were obviously never filled in (CHANGE_ME, your-key-here, xxxx...)."""
    lowered = value.strip().lower()
    return (
        not lowered
        or lowered in _PLACEHOLDER_VALUES
        or lowered.startswith(("your-", "your_", "<"))
        or any(stem in lowered for stem in _PLACEHOLDER_STEMS)
        or len(set(lowered)) == 1
    )


def default_home() -> Path:
    return Path(os.environ.get(HOME_ENV, Path.home() / ".sessionvault")).expanduser()


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {value}")
    return value


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "on", "true", "yes"):
        return True
    if raw in ("0", "off", "false", "no"):
        return False
    raise ConfigError(f"{name} must be on or off, got {raw!r}")


@dataclass(frozen=True)
class Settings:
    database_url: str = field(repr=False)
    key_provider: str = "local"  # local | kms
    master_key: str = field(default="", repr=False)  # local provider, or master_key_file
    master_key_file: Path | None = None
    kms_key_id: str = ""
    audit_salt: str = field(default="", repr=False)
    embeddings: str = "none"  # openai | local | none
    openai_api_key: str = field(default="", repr=False)
    openai_base_url: str = ""
    openai_model: str = "text-embedding-3-small"
    embed_timeout_s: float = 10.0
    rate_per_minute: int = 60
    rate_per_day: int = 1000
    # initialize, notifications, ping and the list calls: their own budget, so a client's
    # start-up never eats its tool budget (per minute only)
    protocol_rate_per_minute: int = 600
    # A workspace's own tool budget, shared by its members, beside each member's own (0: none):
    # one member cannot spend what the others need, nor can a team of many exceed it.
    workspace_rate_per_minute: int = 300
    workspace_rate_per_day: int = 10000
    history_keep: int = 20  # previous versions kept per session, besides the head
    handoff_ttl_days: int = 7
    audit_retention_days: int = 90
    redact_secrets: bool = True  # scrub keys, tokens and passwords before anything is stored
    max_sessions_per_user: int = 1000
    max_bytes_per_user: int = 50 * 1024 * 1024  # stored ciphertext, history included
    # Local mode: failed authentications allowed per client address and minute.
    auth_failures_per_minute: int = 30
    max_body_bytes: int = 1_048_576
    allowed_hosts: tuple[str, ...] = field(default=("127.0.0.1:*", "localhost:*", "[::1]:*"))
    # The OAuth issuer; the resource is <public_url>/mcp. "": the request's Host (checked).
    public_url: str = ""
    oauth_registrations_per_hour: int = 100  # dynamic client registrations, server-wide
    oauth_registrations_per_address: int = 10  # ... and per caller address (salted hash)
    # Client ID Metadata Documents: an https client_id is fetched (server/oauth/cimd.py). Clients that
    # support them (Claude Code, Codex) use them instead of registering once this is advertised,
    # so a server that cannot reach the internet must turn it off for them to register instead.
    oauth_client_documents: bool = True

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, check: bool = True, **overrides: object
    ) -> Settings:
        """From `env` (default: the process environment); `overrides` are values that came from
        elsewhere (secrets, the embedded database) and win over the environment."""
        env = dict(os.environ if env is None else env)
        hosts = env.get("SESSIONVAULT_ALLOWED_HOSTS", "")
        values: dict[str, object] = {
            "database_url": env.get("DATABASE_URL", ""),
            "key_provider": env.get("SESSIONVAULT_KEY_PROVIDER", "local"),
            "master_key": env.get("SESSIONVAULT_MASTER_KEY", ""),
            "kms_key_id": env.get("SESSIONVAULT_KMS_KEY_ID", ""),
            "audit_salt": env.get("SESSIONVAULT_AUDIT_SALT", ""),
            "embeddings": env.get("SESSIONVAULT_EMBEDDINGS", "none"),
            "openai_api_key": env.get("OPENAI_API_KEY", ""),
            "openai_base_url": env.get("OPENAI_BASE_URL", ""),
            "openai_model": env.get("SESSIONVAULT_OPENAI_MODEL", "text-embedding-3-small"),
            "rate_per_minute": _int(env, "SESSIONVAULT_RATE_PER_MINUTE", 60),
            "rate_per_day": _int(env, "SESSIONVAULT_RATE_PER_DAY", 1000),
            "protocol_rate_per_minute": _int(env, "SESSIONVAULT_PROTOCOL_RATE_PER_MINUTE", 600),
            "workspace_rate_per_minute": _int(env, "SESSIONVAULT_WORKSPACE_RATE_PER_MINUTE", 300),
            "workspace_rate_per_day": _int(env, "SESSIONVAULT_WORKSPACE_RATE_PER_DAY", 10000),
            "history_keep": _int(env, "SESSIONVAULT_HISTORY_KEEP", 20),
            "handoff_ttl_days": _int(env, "SESSIONVAULT_HANDOFF_TTL_DAYS", 7),
            "audit_retention_days": _int(env, "SESSIONVAULT_AUDIT_RETENTION_DAYS", 90),
            "redact_secrets": _flag(env, "SESSIONVAULT_REDACT_SECRETS", True),
            "max_sessions_per_user": _int(env, "SESSIONVAULT_MAX_SESSIONS", 1000),
            "max_bytes_per_user": _int(env, "SESSIONVAULT_MAX_BYTES", 50 * 1024 * 1024),
            "auth_failures_per_minute": _int(env, "SESSIONVAULT_AUTH_FAILURES_PER_MINUTE", 30),
            "public_url": env.get("SESSIONVAULT_PUBLIC_URL", "").strip().rstrip("/"),
            "oauth_registrations_per_hour": _int(env, "SESSIONVAULT_OAUTH_REGISTRATIONS_PER_HOUR", 100),
            "oauth_registrations_per_address": _int(env, "SESSIONVAULT_OAUTH_REGISTRATIONS_PER_ADDRESS", 10),
            "oauth_client_documents": _flag(env, "SESSIONVAULT_OAUTH_CLIENT_DOCUMENTS", True),
        }
        if env.get("SESSIONVAULT_MASTER_KEY_FILE"):
            values["master_key_file"] = Path(env["SESSIONVAULT_MASTER_KEY_FILE"])
        if hosts:
            values["allowed_hosts"] = tuple(h.strip() for h in hosts.split(",") if h.strip())
        values.update(overrides)
        settings = cls(**values)  # type: ignore[arg-type]
        if check:
            settings.check()
        return settings

    def problems(self) -> dict[str, str]:
        """Every unusable setting (all of them, not just the first), by field name."""
        found: dict[str, str] = {}
        if not self.database_url or is_placeholder(self.database_url):
            found["database_url"] = "DATABASE_URL is missing"
        if self.key_provider not in ("local", "kms"):
            found["key_provider"] = (
                f"SESSIONVAULT_KEY_PROVIDER must be local or kms, not {self.key_provider!r}"
            )
        if self.key_provider == "local" and not (self.master_key or self.master_key_file):
            found["master_key"] = "SESSIONVAULT_MASTER_KEY or SESSIONVAULT_MASTER_KEY_FILE is missing"
        if self.key_provider == "kms" and is_placeholder(self.kms_key_id):
            found["kms_key_id"] = "SESSIONVAULT_KMS_KEY_ID is missing or a placeholder"
        if is_placeholder(self.audit_salt) or len(self.audit_salt) < 16:
            found["audit_salt"] = "SESSIONVAULT_AUDIT_SALT is missing, a placeholder or under 16 characters"
        if self.embeddings not in ("openai", "local", "none"):
            found["embeddings"] = (
                f"SESSIONVAULT_EMBEDDINGS must be openai, local or none, not {self.embeddings!r}"
            )
        if self.embeddings == "openai" and not self.openai_base_url and is_placeholder(self.openai_api_key):
            found["openai_api_key"] = (
                "OPENAI_API_KEY is missing or a placeholder (needed for openai embeddings)"
            )
        if self.public_url and (problem := public_url_problem(self.public_url)):
            found["public_url"] = f"SESSIONVAULT_PUBLIC_URL {problem}"
        return found

    def check(self) -> None:
        found = self.problems()
        if found:
            raise ConfigError("; ".join(found.values()))


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def public_url_problem(url: str) -> str | None:
    """Why `url` cannot be the server's public URL (the OAuth issuer), or None."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "not a URL"
    if parts.query or parts.fragment or "#" in url or "?" in url:
        return "must have no query or fragment"
    if parts.scheme == "https" and host:
        return None
    if parts.scheme == "http" and is_loopback(host):
        return None
    return "must be https (http only on a loopback address)"
