import os

import pytest

from sessionvault.core import crypto
from sessionvault.errors import DecryptionFailed

KEY = os.urandom(32)
AAD = crypto.session_aad("user-1", "s-1", "auth-jwt", 1)


def test_round_trip_with_sizes_from_the_spec():
    nonce, ct = crypto.seal(KEY, b"the plan", AAD)
    assert len(nonce) == 12
    assert len(ct) == len(b"the plan") + 16  # GCM tag appended
    assert crypto.unseal(KEY, nonce, ct, AAD) == b"the plan"


def test_nonces_are_fresh_per_message():
    assert crypto.seal(KEY, b"x", AAD)[0] != crypto.seal(KEY, b"x", AAD)[0]


@pytest.mark.parametrize("part", ["ciphertext", "tag", "nonce"])
def test_tampering_fails(part):
    nonce, ct = crypto.seal(KEY, b"the plan", AAD)
    flip = bytearray(ct if part != "nonce" else nonce)
    flip[-1 if part == "tag" else 0] ^= 1
    if part == "nonce":
        nonce = bytes(flip)
    else:
        ct = bytes(flip)
    with pytest.raises(DecryptionFailed):
        crypto.unseal(KEY, nonce, ct, AAD)


@pytest.mark.parametrize(
    "other",
    [
        crypto.session_aad("user-2", "s-1", "auth-jwt", 1),  # another user
        crypto.session_aad("user-1", "s-2", "other-session", 1),  # another row of the same user
        crypto.session_aad("user-1", "s-1", "auth-jwt", 2),  # another version
        crypto.session_aad("user-1", "s-9", "auth-jwt", 1),  # the same name, recreated
    ],
)
def test_associated_data_binds_ciphertext_to_its_row(other):
    nonce, ct = crypto.seal(KEY, b"the plan", AAD)
    with pytest.raises(DecryptionFailed):
        crypto.unseal(KEY, nonce, ct, other)


def test_wrong_key_fails():
    nonce, ct = crypto.seal(KEY, b"the plan", AAD)
    with pytest.raises(DecryptionFailed):
        crypto.unseal(os.urandom(32), nonce, ct, AAD)


PREVIEW_AAD = crypto.preview_aad("user-1", "seal-1", "auth-jwt")


def test_a_preview_seals_into_one_value_that_opens_to_its_text():
    sealed = crypto.seal_preview(KEY, "Half done: the refresh — token path", PREVIEW_AAD)
    assert len(sealed) == 12 + len("Half done: the refresh — token path".encode()) + 16
    assert crypto.open_preview(KEY, sealed, PREVIEW_AAD) == "Half done: the refresh — token path"
    assert crypto.seal_preview(KEY, "same", PREVIEW_AAD) != crypto.seal_preview(KEY, "same", PREVIEW_AAD)


@pytest.mark.parametrize(
    "other",
    [
        crypto.preview_aad("user-2", "seal-1", "auth-jwt"),  # another user
        crypto.preview_aad("user-1", "seal-2", "auth-jwt"),  # another version
        crypto.preview_aad("user-1", "seal-1", "renamed"),  # another name
        crypto.legacy_preview_aad("user-1", "seal-1", "auth-jwt", 1),  # the v1 binding
        crypto.sealed_aad("user-1", "seal-1", "auth-jwt"),  # the record's: a preview is no record
    ],
)
def test_a_sealed_preview_opens_only_where_it_was_sealed(other):
    sealed = crypto.seal_preview(KEY, "the plan", PREVIEW_AAD)
    with pytest.raises(DecryptionFailed):
        crypto.open_preview(KEY, sealed, other)


def test_a_record_never_opens_as_a_preview_of_the_same_version():
    nonce, ct = crypto.seal(KEY, b"the plan", crypto.sealed_aad("user-1", "seal-1", "auth-jwt"))
    with pytest.raises(DecryptionFailed):
        crypto.open_preview(KEY, nonce + ct, PREVIEW_AAD)


@pytest.mark.parametrize("sealed", [b"", b"\x00" * 27])
def test_a_sealed_preview_too_short_to_hold_a_nonce_and_tag_fails_cleanly(sealed):
    with pytest.raises(DecryptionFailed):
        crypto.open_preview(KEY, sealed, PREVIEW_AAD)


def test_a_tampered_sealed_preview_fails():
    sealed = bytearray(crypto.seal_preview(KEY, "the plan", PREVIEW_AAD))
    sealed[14] ^= 1
    with pytest.raises(DecryptionFailed):
        crypto.open_preview(KEY, bytes(sealed), PREVIEW_AAD)
