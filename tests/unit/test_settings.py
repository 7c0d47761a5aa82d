import base64
import os

import pytest

from sessionvault.core.keys import LocalKeyProvider, parse_master_key
from sessionvault.errors import ConfigError
from sessionvault.local.host.secretfile import load_or_create_master_key
from sessionvault.settings import Settings, is_placeholder

GOOD = {
    "DATABASE_URL": "postgresql://app@db/sessionvault",
    "SESSIONVAULT_MASTER_KEY": base64.b64encode(os.urandom(32)).decode(),
    "SESSIONVAULT_AUDIT_SALT": "a-long-enough-random-salt",
}


def test_a_complete_environment_loads():
    settings = Settings.from_env(GOOD)
    assert settings.rate_per_minute == 60 and settings.rate_per_day == 1000
    assert "postgresql" not in repr(settings)  # secrets stay out of reprs and logs


@pytest.mark.parametrize("value", ["CHANGE_ME", "changeme", "your-key-here", "xxxxxxxx", "", "   "])
def test_placeholders_are_recognised(value):
    assert is_placeholder(value)


def test_every_problem_is_reported_at_once():
    with pytest.raises(ConfigError) as exc:
        Settings.from_env({"SESSIONVAULT_AUDIT_SALT": "CHANGE_ME", "SESSIONVAULT_EMBEDDINGS": "magic"})
    message = str(exc.value)
    for needle in ("DATABASE_URL", "MASTER_KEY", "AUDIT_SALT", "SESSIONVAULT_EMBEDDINGS"):
        assert needle in message


def test_kms_needs_a_key_id_and_openai_a_key():
    env = {**GOOD, "SESSIONVAULT_KEY_PROVIDER": "kms", "SESSIONVAULT_EMBEDDINGS": "openai"}
    with pytest.raises(ConfigError) as exc:
        Settings.from_env(env)
    assert "KMS_KEY_ID" in str(exc.value) and "OPENAI_API_KEY" in str(exc.value)


def test_bad_numbers_are_named():
    with pytest.raises(ConfigError, match="SESSIONVAULT_RATE_PER_MINUTE"):
        Settings.from_env({**GOOD, "SESSIONVAULT_RATE_PER_MINUTE": "lots"})


@pytest.mark.parametrize("raw", ["CHANGE_ME", "change-me-please-0000000000000000000000000000"])
def test_placeholder_master_keys_are_refused(raw):
    with pytest.raises(ConfigError, match="placeholder"):
        parse_master_key(raw)


@pytest.mark.parametrize("size", [16, 31, 33, 64])
def test_wrong_length_master_keys_are_refused(size):
    with pytest.raises(ConfigError, match="32 bytes"):
        parse_master_key(base64.b64encode(os.urandom(size)).decode())
    with pytest.raises(ConfigError):
        LocalKeyProvider(os.urandom(size))


def test_master_key_accepts_base64_urlsafe_and_hex():
    key = os.urandom(32)
    assert parse_master_key(base64.b64encode(key).decode()) == key
    assert parse_master_key(base64.urlsafe_b64encode(key).decode().rstrip("=")) == key
    assert parse_master_key(key.hex()) == key


def test_master_key_file_is_created_once_with_mode_0600(tmp_path):
    path = tmp_path / "state" / "master.key"
    first = load_or_create_master_key(path)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert load_or_create_master_key(path) == first


def test_random_keys_and_salts_are_never_taken_for_placeholders():
    import secrets

    for _ in range(20_000):  # the old substring rule refused about 1 in 770 of these
        assert not is_placeholder(base64.b64encode(os.urandom(32)).decode())
        assert not is_placeholder(secrets.token_urlsafe(32))


@pytest.mark.parametrize(
    "raw",
    [
        "correct horse battery staple and some more words!",  # a passphrase
        "my secret master key that is long enough for b64!!",
        "A" * 42 + "B=",  # decodes, but its last character carries stray bits
        "0123456789abcdefghij" * 3 + "wxyz",  # 64 characters, not hex
        base64.b64encode(os.urandom(32)).decode() + " extra",
    ],
)
def test_master_keys_that_merely_decode_are_refused(raw):
    with pytest.raises(ConfigError, match="exactly 32 bytes"):
        parse_master_key(raw)
