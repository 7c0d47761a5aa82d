"""Settings, built in one place (`Settings.from_env`). Where values come from is the only
difference between the modes: the environment everywhere, plus Secrets Manager inside Lambda
(`from_lambda`) or the embedded database's state folder on a laptop (`sessionvault.local`).
A missing or placeholder value stops the start."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sessionvault.core import oauth
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
    # Client ID Metadata Documents: an https client_id is fetched (server/cimd.py). Clients that
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
        if self.public_url and (problem := oauth.public_url_problem(self.public_url)):
            found["public_url"] = f"SESSIONVAULT_PUBLIC_URL {problem}"
        return found

    def check(self) -> None:
        found = self.problems()
        if found:
            raise ConfigError("; ".join(found.values()))


# Inside Lambda: Settings field -> the environment variable naming the secret that holds it.
SECRETS = {
    "database_url": "SESSIONVAULT_DATABASE_URL_SECRET",
    "audit_salt": "SESSIONVAULT_AUDIT_SALT_SECRET",
    "openai_api_key": "SESSIONVAULT_OPENAI_KEY_SECRET",
}
OPTIONAL_SECRETS = {"openai_api_key"}


class SecretReadError(Exception):
    """A secret could not be read; `code` is AWS's error code (never the secret or its ARN)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def fetch_secret(name: str) -> str:
    """A Secrets Manager value (SecretString). Read at every cold start, so without boto3:
    importing boto3, botocore and s3transfer costs a Lambda init some 300 ms, more than the
    call. One signed HTTPS request (`_get_secret_value`) does what the SDK would. When botocore
    is loaded already (a process that uses it anyway, moto's in-process mock in the tests), the
    SDK serves it instead: it costs nothing more there."""
    import sys

    if "botocore" in sys.modules:
        import boto3  # type: ignore[import-untyped]

        try:
            answer = boto3.client("secretsmanager").get_secret_value(SecretId=name)
        except Exception as exc:  # botocore's ClientError carries AWS's code
            code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
            raise SecretReadError(str(code or type(exc).__name__)) from None
        return _secret_text(answer)
    return _secret_text(_get_secret_value(name, os.environ))


def _secret_text(answer: Mapping[str, object]) -> str:
    if isinstance(answer.get("SecretString"), str):
        return str(answer["SecretString"]).strip()
    binary = answer.get("SecretBinary")
    if isinstance(binary, bytes | str):  # boto3 gives bytes, the wire base64
        import base64

        raw = binary if isinstance(binary, bytes) else base64.b64decode(binary)
        return raw.decode().strip()
    raise SecretReadError("NoSecretValue")


def _get_secret_value(name: str, env: Mapping[str, str], timeout_s: float = 10.0) -> dict[str, object]:
    """GetSecretValue over HTTPS, signed with Signature Version 4, as botocore sends it: the
    endpoint (AWS_ENDPOINT_URL_SECRETS_MANAGER, AWS_ENDPOINT_URL, else the region's), the
    credentials Lambda gives the function (its environment; under SnapStart the container
    credentials endpoint). AWS's error answers raise SecretReadError(code)."""
    import json
    import urllib.error
    import urllib.request

    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or ""
    if not region:
        raise SecretReadError("NoRegion")
    endpoint = env.get("AWS_ENDPOINT_URL_SECRETS_MANAGER") or env.get("AWS_ENDPOINT_URL") or ""
    if not endpoint:
        suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
        endpoint = f"https://secretsmanager.{region}.{suffix}"
    body = json.dumps({"SecretId": name}).encode()
    headers = {
        "Content-Type": "application/x-amz-json-1.1",
        "X-Amz-Target": "secretsmanager.GetSecretValue",
    }
    signed = sigv4_headers(
        "POST", endpoint, headers, body, region, "secretsmanager", _credentials(env, timeout_s)
    )
    request = urllib.request.Request(endpoint, data=body, method="POST", headers=signed)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # Lambda has no proxy
    try:
        with opener.open(request, timeout=timeout_s) as answer:
            return dict(json.loads(answer.read()))
    except urllib.error.HTTPError as exc:
        try:
            code = str(json.loads(exc.read()).get("__type", "")).rpartition("#")[2]
        except ValueError:
            code = ""
        raise SecretReadError(code or f"HTTP{exc.code}") from None
    except (OSError, ValueError) as exc:
        raise SecretReadError(type(exc).__name__) from None


@dataclass(frozen=True)
class AwsCredentials:
    access_key: str
    secret_key: str = field(repr=False)
    token: str = field(default="", repr=False)


def _credentials(env: Mapping[str, str], timeout_s: float) -> AwsCredentials:
    """The function's role credentials: the environment (on-demand init), else the container
    credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI with its authorization token:
    how Lambda gives them to a SnapStart function), botocore's order."""
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return AwsCredentials(
            env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env.get("AWS_SESSION_TOKEN", "")
        )
    import json
    import urllib.request

    uri = env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI", "")
    if not uri and env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        uri = "http://169.254.170.2" + env["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"]
    if not uri:
        raise SecretReadError("NoCredentials")
    token = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN", "")
    if not token and env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"):
        token = Path(env["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"]).read_text().strip()
    request = urllib.request.Request(uri, headers={"Authorization": token} if token else {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout_s) as answer:
            found = json.loads(answer.read())
        return AwsCredentials(found["AccessKeyId"], found["SecretAccessKey"], found.get("Token", ""))
    except (OSError, ValueError, KeyError, TypeError):
        raise SecretReadError("CredentialsUnavailable") from None


def sigv4_headers(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    region: str,
    service: str,
    credentials: AwsCredentials,
    now: float | None = None,
) -> dict[str, str]:
    """headers plus Host, X-Amz-Date, X-Amz-Security-Token and the Signature Version 4
    Authorization over all of them (a request without a query string)."""
    import hashlib
    import hmac
    import time
    from urllib.parse import quote, urlsplit

    parts = urlsplit(url)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    default_port = {"https": 443, "http": 80}.get(parts.scheme)
    host = parts.hostname or ""
    if parts.port and parts.port != default_port:
        host = f"{host}:{parts.port}"
    signed = {**headers, "Host": host, "X-Amz-Date": stamp}
    if credentials.token:
        signed["X-Amz-Security-Token"] = credentials.token
    canonical = {k.lower(): " ".join(str(v).split()) for k, v in signed.items()}
    names = sorted(canonical)
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    request = "\n".join(
        [
            method,
            quote(parts.path or "/", safe="/~"),
            "",
            "".join(f"{n}:{canonical[n]}\n" for n in names),
            ";".join(names),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(request.encode()).hexdigest()])
    key = ("AWS4" + credentials.secret_key).encode()
    for part in (stamp[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    signed["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return signed


def from_lambda(env: Mapping[str, str] | None = None, fetch: Callable[[str], str] = fetch_secret) -> Settings:
    """Plain values from the environment, secrets from Secrets Manager. A cold start with any
    missing or placeholder setting logs one structured line per problem and refuses to serve."""
    from sessionvault import telemetry

    env = dict(os.environ if env is None else env)
    values: dict[str, object] = {}
    problems: dict[str, str] = {}
    for name, var in SECRETS.items():
        secret = env.get(var, "")
        if not secret:
            if name not in OPTIONAL_SECRETS:
                problems[name] = f"{var} is not set"
            continue
        try:
            values[name] = fetch(secret)
        except Exception as exc:  # the message could carry the secret's ARN: keep the code only
            code = exc.code if isinstance(exc, SecretReadError) else type(exc).__name__
            problems[name] = f"{var}: the secret could not be read ({code})"
    try:
        settings = Settings.from_env(env, check=False, **values)
    except ConfigError as exc:  # a malformed number: report it like every other problem
        problems["environment"] = str(exc)
    else:
        for name, problem in settings.problems().items():
            problems.setdefault(name, problem)  # one line per setting, naming what to fix
    if problems:
        for problem in problems.values():
            telemetry.logger().error("configuration problem", extra={"problem": problem})
        raise ConfigError(f"refusing to serve: {len(problems)} configuration problem(s), see the log")
    return settings
