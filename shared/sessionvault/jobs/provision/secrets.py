"""The stack's secrets as the migrate function reads and writes them (Secrets Manager): the owner
secret, the login roles' passwords, the connection-URL secrets the functions read (written only
when the value changed, so a no-op deploy adds no version). Every value read is kept by the
request's `Scrubber`, which takes them out of any text before it leaves (the stack events, the
log), along with anything shaped like a password."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from sessionvault.errors import ProvisionFailed
from sessionvault.jobs.provision.config import Login


@dataclass
class Scrubber:
    """Every secret value read during a request, taken out of any text before it leaves."""

    values: set[str] = field(default_factory=set)

    def add(self, value: str) -> str:
        if value:
            self.values.add(value)
        return value

    def __call__(self, text: str) -> str:
        for value in sorted(self.values, key=len, reverse=True):
            text = text.replace(value, "[REDACTED]")
        text = re.sub(r"(://[^:/@\s]*:)[^@\s]+@", r"\1[REDACTED]@", text)  # user:password@
        return re.sub(r"(?i)(password\s*=\s*)\S+", r"\1[REDACTED]", text)


SecretsClient = Any  # a boto3 Secrets Manager client (boto3 ships no type stubs here)


def error_code(exc: BaseException) -> str:
    """botocore's errors carry a code: keep it, not the whole message."""
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code") or type(exc).__name__)


def read_secret(client: SecretsClient, secret_id: str, what: str, scrub: Scrubber) -> str:
    try:
        value = client.get_secret_value(SecretId=secret_id)["SecretString"]
    except Exception as exc:
        raise ProvisionFailed(f"could not read {what} {secret_id} ({error_code(exc)})") from None
    return scrub.add(str(value))


def read_login_password(client: SecretsClient, login: Login, scrub: Scrubber) -> str:
    """The role secret is {"username": <role>, "password": ...} (GenerateSecretString)."""
    raw = read_secret(client, login.role_secret, f"the {login.role} password secret", scrub)
    try:
        value = json.loads(raw)
        username, password = str(value["username"]), str(value["password"])
    except (ValueError, KeyError, TypeError):
        raise ProvisionFailed(f"the secret {login.role_secret} is not {{username, password}} JSON") from None
    if username != login.role:
        raise ProvisionFailed(f"the secret {login.role_secret} is for {username!r}, expected {login.role}")
    return scrub.add(password)


def write_if_changed(client: SecretsClient, secret_id: str, value: str) -> bool:
    """PutSecretValue only when the value differs, so a no-op deploy adds no secret version."""
    current = client.get_secret_value(SecretId=secret_id)["SecretString"]
    if current == value:
        return False
    client.put_secret_value(SecretId=secret_id, SecretString=value)
    return True
