"""The composition root: settings in, every long-lived object of one process out."""

from __future__ import annotations

from dataclasses import dataclass

from sessionvault.core.embedding import providers as embeddings
from sessionvault.core.keys import (
    DekCache,
    KeyProvider,
    KmsKeyProvider,
    LocalKeyProvider,
    parse_master_key,
)
from sessionvault.db.pool import Database
from sessionvault.db.saves import Quota
from sessionvault.errors import ConfigError
from sessionvault.service.vault import Vault
from sessionvault.settings import Settings


@dataclass
class Runtime:
    settings: Settings
    db: Database
    keys: DekCache
    vault: Vault

    def close(self) -> None:
        self.db.close()


def key_provider(settings: Settings) -> KeyProvider:
    if settings.key_provider == "kms":
        return KmsKeyProvider(settings.kms_key_id)
    if settings.master_key:
        return LocalKeyProvider(parse_master_key(settings.master_key))
    if settings.master_key_file and settings.master_key_file.exists():
        return LocalKeyProvider(parse_master_key(settings.master_key_file.read_text()))
    raise ConfigError(f"master key file not found: {settings.master_key_file}")


def open_runtime(settings: Settings, *, pool_size: int = 8) -> Runtime:
    keys = DekCache(key_provider(settings))
    db = Database(settings.database_url, max_size=pool_size)
    quota = Quota(settings.max_sessions_per_user, settings.max_bytes_per_user)
    embedder = embeddings.from_settings(settings)
    vault = Vault(
        db,
        keys,
        embedder,
        settings.history_keep,
        quota,
        redact=settings.redact_secrets,
        handoff_ttl_days=settings.handoff_ttl_days,
        workspace_limits=(settings.workspace_rate_per_minute, settings.workspace_rate_per_day),
    )
    return Runtime(settings, db, keys, vault)
