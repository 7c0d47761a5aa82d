"""Every error class SessionVault defines, in one place. Each carries the short class recorded
in the audit trail (`error_class`), never its message: messages may hold caller data.

    SessionVaultError
    ├── ConfigError                 a setting or local state is unusable; nothing serves
    │   ├── StateInUse              another server holds the state folder
    │   └── ModelMissing            the local embedding model is not installed
    ├── ProvisionFailed             the Database custom resource failed on deploy
    ├── VaultError                  reported to the caller of a tool, the API or a page
    │   ├── ValidationFailed
    │   ├── NotFound                what the caller names is not theirs (404)
    │   ├── WorkspaceDenied         not a member of the workspace named, or not allowed
    │   ├── ProviderUnavailable     the embedding or key service did not answer
    │   ├── ScopeMissing
    │   ├── QuotaExceeded
    │   ├── BudgetExceeded          an import larger than what the rate limit allows now
    │   ├── KeyReplaced
    │   └── DecryptionFailed
    ├── AccountError                an admin action cannot be done as asked
    ├── Refused                     an HTTP request ends with this status
    ├── NotAdmitted                 a riding admission did not admit
    ├── DocumentError               a Client ID Metadata Document cannot be used
    ├── SecretReadError             a Secrets Manager value could not be read
    ├── ConfigFileError             a client's config file cannot be edited safely
    ├── ToolCallFailed              a remote tools/call answered with an error
    ├── DeployFailed                a step of `sessionvault deploy` failed
    └── UpstreamError               the laptop cannot reach or use the server
        ├── RateLimited
        └── Unavailable
"""

from __future__ import annotations

from typing import Literal

ErrorClass = Literal[
    "auth", "rate_limit", "validation", "db", "provider", "timeout", "internal", "scope", "quota"
]


class SessionVaultError(Exception):
    """The root: a command-line entry point reports any of these as one line, not a traceback."""

    error_class: ErrorClass = "internal"


class ConfigError(SessionVaultError):
    """A setting is missing or unusable; the process must not serve."""


class StateInUse(ConfigError):
    """Another process serves from this state folder."""


class ModelMissing(ConfigError):
    """The local embedding model's package (or one of its files) is not installed."""


class ProvisionFailed(SessionVaultError):
    """The Database custom resource could not set the database up on deploy. The message
    becomes the stack event's reason: it names what failed and never holds a secret."""

    error_class = "db"


class VaultError(SessionVaultError):
    """An error a tool reports to its caller."""


class ValidationFailed(VaultError):
    error_class = "validation"


class NotFound(VaultError):
    """What the caller names (a session, a version, a key) is not theirs: a 404 on the HTTP API
    and the web view."""

    error_class = "validation"


class WorkspaceDenied(VaultError):
    """The call named a workspace the caller cannot use as asked: not a member (or no such
    workspace: the same answer), or a role that does not allow it (`role` "denied:<role>")."""

    error_class = "validation"

    def __init__(self, role: str | None, message: str = "no such workspace") -> None:
        super().__init__(message)
        self.role = role


class ProviderUnavailable(VaultError):
    error_class = "provider"


class ScopeMissing(VaultError):
    """The API key lacks the scope this tool needs."""

    error_class = "scope"


class QuotaExceeded(VaultError):
    """The user stores as much as the server allows; the message says how to free space."""

    error_class = "quota"


class BudgetExceeded(VaultError):
    """An import carries more versions than the caller's rate windows allow now: refused before
    any work (a 429 with Retry-After), saying how many fit now and the per-minute limit."""

    error_class = "rate_limit"

    def __init__(self, message: str, *, retry_after_s: int, fits_now: int, per_minute: int) -> None:
        super().__init__(message)
        self.retry_after_s, self.fits_now, self.per_minute = retry_after_s, fits_now, per_minute


class WorkspaceBusy(VaultError):
    """A workspace's own rate budget (shared by its members, beside each member's own) is used up
    for now: `window` (minute | day), its `limit` of calls, `retry_after_s` until it frees."""

    error_class = "rate_limit"

    def __init__(self, window: str, limit: int, retry_after_s: int, message: str = "") -> None:
        super().__init__(message or f"the workspace's {window} budget of {limit} calls is used up")
        self.window, self.limit, self.retry_after_s = window, limit, retry_after_s


class KeyReplaced(VaultError):
    """The user's data key was replaced (a re-key) while this save was under way."""

    error_class = "db"

    def __init__(self) -> None:
        super().__init__("your data key was just replaced; nothing was saved: save again")


class DecryptionFailed(VaultError):
    def __init__(self) -> None:
        super().__init__("stored content failed its integrity check")


class AccountError(SessionVaultError):
    """An admin action on users or keys cannot be done as asked (unknown user, ambiguous key)."""

    error_class = "validation"


class Refused(SessionVaultError):
    """An HTTP request ends here with this status, body and headers. It carries what its log
    line says of it (the edge check that stopped it, or why a credential was refused: never
    sent to the caller): the one place a request's line is finished reads them off it."""

    def __init__(
        self,
        status: int,
        body: bytes,
        error_class: ErrorClass,
        headers: dict[str, str] | None = None,
        *,
        edge_check: str = "",
        auth_reason: str = "",
    ) -> None:
        super().__init__(f"HTTP {status}")
        self.status, self.body, self.error_class, self.headers = status, body, error_class, headers
        self.edge_check, self.auth_reason = edge_check, auth_reason


class NotAdmitted(SessionVaultError):
    """The admission that opened the tool's transaction did not admit (`db.admission.Ride`):
    what the tool read is nothing and must not reach the caller; the server answers from the
    admission's result instead."""

    error_class = "auth"


class DocumentError(SessionVaultError):
    """Why a Client ID Metadata Document cannot be used: `code` for the log line (never shown to
    the caller, who sees an unknown client), `detail` for people reading the log."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(detail or code)
        self.code = code


class ConfigFileError(SessionVaultError):
    """A client's config file cannot be edited safely; nothing was written."""


class ToolCallFailed(SessionVaultError):
    """A remote tools/call answered with an error (hook and doctor side)."""


class DeployFailed(SessionVaultError):
    """A step of `sessionvault deploy` failed: the message names the command, its exit code and
    the tail of its stderr (no secret is ever on a deploy command line)."""


class UpstreamError(SessionVaultError):
    """The bridge cannot reach or use the remote server; the message is meant for the user."""


class SecretReadError(SessionVaultError):
    """A secret could not be read; `code` is AWS's error code (never the secret or its ARN)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class RateLimited(UpstreamError):
    """A 429: the key's rate limit (or the address's failed-login limit) is used up."""

    error_class = "rate_limit"

    def __init__(self, message: str, retry_after: int | None, per_minute: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.per_minute = per_minute  # an import's refusal: the per-minute limit it is taken from


class Unavailable(UpstreamError):
    """A 5xx or a connection that failed: may pass if tried again later."""

    def __init__(self, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
