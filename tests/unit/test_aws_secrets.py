"""KMS without boto3 (issue 29, item 4): the stdlib client (`aws_secrets.KmsClient`; its
signature: tests/unit/test_aws_signing.py) keeps KmsKeyProvider's contract against a KMS over
HTTP (moto's server, a separate endpoint as AWS would be), maps AWS's errors as the boto3 path
does, and a process that uses it never imports boto3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
