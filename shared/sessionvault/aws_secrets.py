"""Settings inside Lambda: plain values from the environment, secrets from Secrets Manager
(`from_lambda`), read with one SigV4-signed HTTPS request each (`aws_signing`), not with
boto3: importing boto3 would cost every cold start some 300 ms. KMS is called the same way
(`KmsClient`), so no request in Lambda imports boto3."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING

from sessionvault.aws_signing import AwsCredentials, role_credentials, sigv4_headers
from sessionvault.errors import ConfigError, SecretReadError
from sessionvault.settings import Settings

if TYPE_CHECKING:
    import urllib.request

# Inside Lambda: Settings field -> the environment variable naming the secret that holds it.
SECRETS = {
    "database_url": "SESSIONVAULT_DATABASE_URL_SECRET",
    "audit_salt": "SESSIONVAULT_AUDIT_SALT_SECRET",
    "openai_api_key": "SESSIONVAULT_OPENAI_KEY_SECRET",
}
OPTIONAL_SECRETS = {"openai_api_key"}


def fetch_secret(name: str) -> str:
    """A Secrets Manager value (SecretString). Read at every cold start, so without boto3:
    importing boto3, botocore and s3transfer costs a Lambda init some 300 ms, more than the
    call. One signed HTTPS request (`_get_secret_value`) does what the SDK would. When boto3
    is loaded already (a process that uses it anyway, moto's in-process mock in the tests), the
    SDK serves it instead: it costs nothing more there. Not botocore: Powertools imports it."""
    import sys

    if "boto3" in sys.modules:
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
    """GetSecretValue, one signed request (`aws_json`); AWS's error answers raise
    SecretReadError(code)."""
    return aws_json(
        "secretsmanager", "secretsmanager.GetSecretValue", {"SecretId": name}, env, SecretReadError, timeout_s
    )


ENDPOINT_ENV = {"secretsmanager": "AWS_ENDPOINT_URL_SECRETS_MANAGER", "kms": "AWS_ENDPOINT_URL_KMS"}


def aws_json(
    service: str,
    target: str,
    payload: Mapping[str, object],
    env: Mapping[str, str],
    error: Callable[[str], Exception],
    timeout_s: float = 10.0,
    credentials: AwsCredentials | None = None,
) -> dict[str, object]:
    """One call of an AWS JSON 1.1 API (Secrets Manager, KMS) over HTTPS, signed with Signature
    Version 4 as botocore signs it: the endpoint (AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL,
    else the region's), the credentials Lambda gives the function (its environment; under
    SnapStart the container credentials endpoint). A failure raises `error(code)`: AWS's error
    code, or the kind of failure (no region, no network) when AWS did not answer."""
    import json
    import urllib.error
    import urllib.request

    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or ""
    if not region:
        raise error("NoRegion")
    endpoint = env.get(ENDPOINT_ENV.get(service, "")) or env.get("AWS_ENDPOINT_URL") or ""
    if not endpoint:
        suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
        endpoint = f"https://{service}.{region}.{suffix}"
    body = json.dumps(payload).encode()
    headers = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": target}
    try:
        credentials = credentials or role_credentials(env, timeout_s)
    except SecretReadError as exc:
        raise error(exc.code) from None
    signed = sigv4_headers("POST", endpoint, headers, body, region, service, credentials)
    request = urllib.request.Request(endpoint, data=body, method="POST", headers=signed)
    try:
        with _opener().open(request, timeout=timeout_s) as answer:
            return dict(json.loads(answer.read()))
    except urllib.error.HTTPError as exc:
        try:
            code = str(json.loads(exc.read()).get("__type", "")).rpartition("#")[2]
        except ValueError:
            code = ""
        raise error(code or f"HTTP{exc.code}") from None
    except (OSError, ValueError) as exc:
        raise error(type(exc).__name__) from None


@cache
def _opener() -> urllib.request.OpenerDirector:
    """One per process: each opener's HTTPS context loads the CA bundle (~20 ms of CPU), which
    a cold start paid for every secret read and again for the first save's KMS call. No proxy:
    Lambda has none."""
    import urllib.request

    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


class KmsClient:
    """KMS's GenerateDataKey, Decrypt and Encrypt, one signed request each (`aws_json`), with
    boto3's method names and answer shapes (bytes in and out), so `KmsKeyProvider` takes
    either. Without boto3: importing it cost a cold Lambda's first save some 250 ms (the
    data key's unwrap), once per environment. The credentials are read on the first call, not
    when the client is made (a SnapStart snapshot must not hold them), and again when they
    are about to expire."""

    def __init__(self, error: Callable[[str], Exception], env: Mapping[str, str] | None = None) -> None:
        self._error, self._env = error, env
        self._credentials: AwsCredentials | None = None
        self._read_at = 0.0

    def _call(self, operation: str, payload: dict[str, object]) -> dict[str, object]:
        """One call, tried a second time after a failure that a second try can mend (as
        botocore retries): throttling, a 5xx, a dropped connection; or expired credentials,
        read again first. Any other failure, or a second one, raises `error(code)`."""
        import time

        env = os.environ if self._env is None else self._env
        for attempt in (1, 2):
            try:
                if self._credentials is None or time.monotonic() - self._read_at > CREDENTIALS_TTL_S:
                    self._credentials, self._read_at = role_credentials(env, 10.0), time.monotonic()
                target = f"TrentService.{operation}"
                return aws_json("kms", target, payload, env, SecretReadError, 10.0, self._credentials)
            except SecretReadError as exc:
                if exc.code in KMS_EXPIRED:
                    self._credentials = None
                if attempt == 2 or not (exc.code in KMS_EXPIRED or _transient(exc.code)):
                    raise self._error(exc.code) from None
        raise AssertionError("unreachable: the second attempt returns or raises")

    def generate_data_key(
        self, *, KeyId: str, KeySpec: str, EncryptionContext: dict[str, str]
    ) -> dict[str, object]:
        out = self._call(
            "GenerateDataKey", {"KeyId": KeyId, "KeySpec": KeySpec, "EncryptionContext": EncryptionContext}
        )
        return {**out, "Plaintext": _b64(out, "Plaintext"), "CiphertextBlob": _b64(out, "CiphertextBlob")}

    def decrypt(
        self, *, CiphertextBlob: bytes, EncryptionContext: dict[str, str], KeyId: str
    ) -> dict[str, object]:
        import base64

        blob = base64.b64encode(CiphertextBlob).decode()
        out = self._call(
            "Decrypt", {"CiphertextBlob": blob, "EncryptionContext": EncryptionContext, "KeyId": KeyId}
        )
        return {**out, "Plaintext": _b64(out, "Plaintext")}

    def encrypt(
        self, *, KeyId: str, Plaintext: bytes, EncryptionContext: dict[str, str]
    ) -> dict[str, object]:
        import base64

        plain = base64.b64encode(Plaintext).decode()
        out = self._call(
            "Encrypt", {"KeyId": KeyId, "Plaintext": plain, "EncryptionContext": EncryptionContext}
        )
        return {**out, "CiphertextBlob": _b64(out, "CiphertextBlob")}


CREDENTIALS_TTL_S = 300.0  # role credentials last hours; read again well before they expire
KMS_EXPIRED = frozenset({"ExpiredTokenException", "UnrecognizedClientException"})
# Worth a second try (botocore's standard retry mode retries these too); a 5xx without an
# AWS code arrives as "HTTP5xx", a dropped connection or a timeout as its exception's name.
KMS_TRANSIENT = frozenset(
    {
        "ThrottlingException",
        "KMSInternalException",
        "DependencyTimeoutException",
        "URLError",
        "TimeoutError",
        "ConnectionResetError",
        "RemoteDisconnected",
    }
)


def _transient(code: str) -> bool:
    return code in KMS_TRANSIENT or code.startswith("HTTP5")


def _b64(answer: Mapping[str, object], name: str) -> bytes:
    import base64

    return base64.b64decode(str(answer[name]))


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
