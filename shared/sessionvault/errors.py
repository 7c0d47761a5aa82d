"""Errors that carry the short class recorded in the audit trail, never their message."""

from __future__ import annotations

from typing import Literal

ErrorClass = Literal["auth", "rate_limit", "validation", "db", "provider", "timeout", "internal"]


class ConfigError(Exception):
    """A setting is missing or unusable; the process must not serve."""


class VaultError(Exception):
    """An error a tool reports to its caller; `error_class` goes to the audit trail."""

    error_class: ErrorClass = "internal"


class ValidationFailed(VaultError):
    error_class = "validation"


class ProviderUnavailable(VaultError):
    error_class = "provider"


class DecryptionFailed(VaultError):
    error_class = "internal"

    def __init__(self) -> None:
        super().__init__("stored content failed its integrity check")
