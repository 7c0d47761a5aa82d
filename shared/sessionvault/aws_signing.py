"""AWS's request signing without botocore: the function's role credentials
(`role_credentials`) and a Signature Version 4 over a request (`sigv4_headers`). What
`aws_secrets` signs its Secrets Manager and KMS calls with; tested against the AWS SigV4 test
suite's signatures and equal to botocore's SigV4Auth (tests/unit/test_aws_signing.py), and in
the Lambda runtime against a moto server.

Kept by measurement (issue 33, item 4; BENCHMARKS.md, "The AWS SDK's clients or the package's"):
the same function on boto3's clients starts ~145 ms slower (secrets at init) and its first save
~20 ms slower (KMS), in the Lambda layout."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sessionvault.errors import SecretReadError


@dataclass(frozen=True)
class AwsCredentials:
    access_key: str
    secret_key: str = field(repr=False)
    token: str = field(default="", repr=False)


def role_credentials(env: Mapping[str, str], timeout_s: float) -> AwsCredentials:
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
