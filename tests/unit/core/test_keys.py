"""One contract, two providers: the local master-key provider and KMS (through moto)."""

import os
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from sessionvault.core.keys import DekCache, KeyProvider, KmsKeyProvider, LocalKeyProvider, WrappedKey


@pytest.fixture(params=["local", "kms"])
def provider(request) -> Iterator[KeyProvider]:
    if request.param == "local":
        yield LocalKeyProvider(os.urandom(32))
        return
    with mock_aws():
        kms = boto3.client("kms", region_name="us-east-1")
        key_id = kms.create_key(Description="sessionvault test")["KeyMetadata"]["Arn"]
        yield KmsKeyProvider(key_id, client=kms)


def test_generates_a_32_byte_key_and_unwraps_it(provider):
    dek, wrapped = provider.generate_data_key("user-1")
    assert len(dek) == 32
    assert dek not in wrapped.blob  # the stored form is not the key
    assert provider.unwrap("user-1", wrapped) == dek


def test_each_user_gets_a_different_key(provider):
    assert provider.generate_data_key("user-1")[0] != provider.generate_data_key("user-2")[0]


def test_a_wrapped_key_is_bound_to_its_user(provider):
    _dek, wrapped = provider.generate_data_key("user-1")
    with pytest.raises(Exception):  # noqa: B017 - each provider raises its own error type
        provider.unwrap("user-2", wrapped)


def test_tampered_wrapped_key_fails(provider):
    _dek, wrapped = provider.generate_data_key("user-1")
    blob = bytearray(wrapped.blob)
    blob[len(blob) // 2] ^= 1
    with pytest.raises(Exception):  # noqa: B017
        provider.unwrap("user-1", WrappedKey(bytes(blob), wrapped.key_id))


def test_wrap_rewraps_an_existing_key(provider):
    dek, _ = provider.generate_data_key("user-1")
    again = provider.wrap("user-1", dek)
    assert again.key_id == provider.key_id or again.key_id.endswith(provider.key_id.split("/")[-1])
    assert provider.unwrap("user-1", again) == dek


class CountingProvider:
    def __init__(self, inner: KeyProvider) -> None:
        self.inner = inner
        self.key_id = inner.key_id
        self.calls = 0

    def unwrap(self, user_id, wrapped):
        self.calls += 1
        return self.inner.unwrap(user_id, wrapped)


def test_dek_cache_hits_expires_and_is_bounded(provider, monkeypatch):
    counting = CountingProvider(provider)
    cache = DekCache(counting, max_entries=2, ttl_s=60)
    keys = {u: provider.generate_data_key(u) for u in ("a", "b", "c")}
    assert cache.unwrap("a", keys["a"][1]) == keys["a"][0]
    cache.unwrap("a", keys["a"][1])
    assert counting.calls == 1  # the second call came from the cache
    cache.unwrap("b", keys["b"][1])
    cache.unwrap("c", keys["c"][1])
    assert len(cache) == 2  # bounded: "a" was evicted
    cache.unwrap("a", keys["a"][1])
    assert counting.calls == 4

    import sessionvault.core.keys as kp

    now = kp.time.monotonic()
    monkeypatch.setattr(kp.time, "monotonic", lambda: now + 61)
    cache.unwrap("a", keys["a"][1])
    assert counting.calls == 5  # expired after the TTL
