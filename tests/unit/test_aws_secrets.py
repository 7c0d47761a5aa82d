"""KMS without boto3 (issue 29, item 4): the stdlib client (`aws_secrets.KmsClient`; its
signature: tests/unit/test_aws_signing.py) keeps KmsKeyProvider's contract against a KMS over
HTTP (moto's server, a separate endpoint as AWS would be), maps AWS's errors as the boto3 path
does, and a process that uses it never imports boto3."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator

import boto3
import pytest
from moto.server import ThreadedMotoServer

from sessionvault.aws_secrets import KmsClient
from sessionvault.core.keys import KmsKeyProvider, WrappedKey, _kms_code_failure
from sessionvault.errors import DecryptionFailed, ProviderUnavailable
from tests.conftest import free_port


@pytest.fixture(scope="module")
def kms() -> Iterator[tuple[dict[str, str], str]]:
    """A KMS endpoint over HTTP (moto's server), the environment that names it, and a key."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_SESSION_TOKEN": "token",
        "AWS_ENDPOINT_URL_KMS": f"http://127.0.0.1:{port}",
    }
    admin = boto3.client(
        "kms",
        region_name="us-east-1",
        endpoint_url=env["AWS_ENDPOINT_URL_KMS"],
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
    )
    key_id = admin.create_key(Description="sessionvault stdlib client")["KeyMetadata"]["Arn"]
    try:
        yield env, key_id
    finally:
        server.stop()


def test_the_stdlib_client_keeps_the_providers_contract(kms: tuple[dict[str, str], str]) -> None:
    env, key_id = kms
    provider = KmsKeyProvider(key_id, client=KmsClient(_kms_code_failure, env))
    dek, wrapped = provider.generate_data_key("user-1")
    assert len(dek) == 32 and dek not in wrapped.blob
    assert provider.unwrap("user-1", wrapped) == dek
    with pytest.raises(DecryptionFailed):  # bound to its user, as with boto3
        provider.unwrap("user-2", wrapped)
    with pytest.raises(DecryptionFailed):  # a tampered blob
        tampered = wrapped.blob[:-1] + bytes([wrapped.blob[-1] ^ 1])
        provider.unwrap("user-1", WrappedKey(tampered, wrapped.key_id))
    rewrapped = provider.wrap("user-1", dek)
    assert rewrapped.blob != wrapped.blob and provider.unwrap("user-1", rewrapped) == dek


def test_kms_out_of_reach_is_unavailable_not_an_integrity_failure(kms: tuple[dict[str, str], str]) -> None:
    env, key_id = kms
    nowhere = {**env, "AWS_ENDPOINT_URL_KMS": f"http://127.0.0.1:{free_port()}"}
    provider = KmsKeyProvider(key_id, client=KmsClient(_kms_code_failure, nowhere))
    with pytest.raises(ProviderUnavailable):
        provider.unwrap("user-1", WrappedKey(b"x" * 64, key_id))
    no_credentials = {k: v for k, v in env.items() if not k.startswith("AWS_ACCESS")}
    with pytest.raises(ProviderUnavailable):
        KmsKeyProvider(key_id, client=KmsClient(_kms_code_failure, no_credentials)).generate_data_key("u")


class FlakyKms:
    """In front of moto's KMS: answers the next calls from `script` (HTTP status, AWS error
    code), then passes calls through; counts every call it gets."""

    def __init__(self, upstream: str) -> None:
        self.script: list[tuple[int, str]] = []
        self.calls = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer.calls += 1
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if outer.script:
                    status, code = outer.script.pop(0)
                    answer = json.dumps({"__type": code, "message": "scripted"}).encode()
                else:
                    sent = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                    request = urllib.request.Request(upstream, data=body, headers=sent, method="POST")
                    with urllib.request.urlopen(request, timeout=10) as reply:
                        status, answer = reply.status, reply.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def flaky(kms: tuple[dict[str, str], str]) -> Iterator[tuple[FlakyKms, KmsKeyProvider]]:
    env, key_id = kms
    proxy = FlakyKms(env["AWS_ENDPOINT_URL_KMS"])
    # The signature covers the Host header: the proxy relays it as signed for its own address,
    # which moto does not check.
    client = KmsClient(_kms_code_failure, {**env, "AWS_ENDPOINT_URL_KMS": proxy.url})
    try:
        yield proxy, KmsKeyProvider(key_id, client=client)
    finally:
        proxy.server.shutdown()


@pytest.mark.parametrize(
    "failure",
    [(400, "ThrottlingException"), (500, "KMSInternalException"), (503, ""), (400, "ExpiredTokenException")],
)
def test_one_failure_a_second_try_can_mend_is_tried_again(
    flaky: tuple[FlakyKms, KmsKeyProvider], failure: tuple[int, str]
) -> None:
    proxy, provider = flaky
    dek, wrapped = provider.generate_data_key("user-1")
    proxy.script, proxy.calls = [failure], 0
    assert provider.unwrap("user-1", wrapped) == dek
    assert proxy.calls == 2


def test_a_second_failure_or_a_refusal_is_not_tried_again(flaky: tuple[FlakyKms, KmsKeyProvider]) -> None:
    proxy, provider = flaky
    _, wrapped = provider.generate_data_key("user-1")
    proxy.script, proxy.calls = [(400, "ThrottlingException"), (400, "ThrottlingException")], 0
    with pytest.raises(ProviderUnavailable):
        provider.unwrap("user-1", wrapped)
    assert proxy.calls == 2
    proxy.script, proxy.calls = [(400, "AccessDeniedException")], 0
    with pytest.raises(ProviderUnavailable):
        provider.unwrap("user-1", wrapped)
    assert proxy.calls == 1
    proxy.script, proxy.calls = [(400, "InvalidCiphertextException")], 0
    with pytest.raises(DecryptionFailed):  # an integrity failure stays one, at once
        provider.unwrap("user-1", wrapped)
    assert proxy.calls == 1


PROBE = """
import json, sys
from sessionvault.core.keys import KmsKeyProvider
provider = KmsKeyProvider(sys.argv[1])
dek, wrapped = provider.generate_data_key("user-1")
assert provider.unwrap("user-1", wrapped) == dek
print(json.dumps(sorted(m for m in ("boto3", "botocore", "s3transfer") if m in sys.modules)))
"""


def test_a_process_that_unwraps_keys_never_imports_boto3(kms: tuple[dict[str, str], str]) -> None:
    env, key_id = kms
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    argv = [sys.executable, "-c", PROBE, key_id]
    out = subprocess.run(argv, env={**clean, **env}, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == []
