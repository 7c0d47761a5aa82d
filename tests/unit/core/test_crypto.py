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
