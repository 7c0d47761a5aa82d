"""The list_sessions cursor: opaque, round-trips (updated_at, id), and a forged or truncated one
is a validation error that never repeats what the caller sent."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from sessionvault.core.cursor import decode_cursor, encode_cursor
from sessionvault.errors import ValidationFailed

MESSAGE = "invalid arguments: cursor: use next_cursor from list_sessions"
ID = uuid.UUID("1b4e28ba-2fa1-11d2-883f-0016d3cca427")
AT = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.urlsafe_b64encode(raw).decode()


# --- round trip -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "updated_at",
    [AT, AT.replace(microsecond=0), AT.astimezone(timezone(timedelta(hours=-5, minutes=-30)))],
)
def test_a_cursor_decodes_to_the_timestamp_and_id_it_was_made_from(updated_at: datetime) -> None:
    stamp, session_id = decode_cursor(encode_cursor(updated_at, ID))
    assert stamp == updated_at and stamp.utcoffset() == updated_at.utcoffset()
    assert session_id == str(ID)


def test_the_id_may_be_given_as_a_uuid_or_its_text() -> None:
    assert encode_cursor(AT, ID) == encode_cursor(AT, str(ID))


def test_the_id_comes_back_in_canonical_lowercase_form() -> None:
    _, session_id = decode_cursor(encode_cursor(AT, str(ID).upper()))
    assert session_id == str(ID)


def test_a_cursor_is_url_safe_text() -> None:
    cursor = encode_cursor(AT, ID)
    assert cursor.isascii()
    assert not set(cursor) & set("+/ \n")


def test_a_cursor_does_not_show_its_contents_in_plain_text() -> None:
    cursor = encode_cursor(AT, ID)
    assert str(ID) not in cursor and "2026" not in cursor


def test_an_empty_cursor_means_the_first_page() -> None:
    assert decode_cursor("") is None


# --- refused cursors --------------------------------------------------------------------------

BAD = {
    "garbage": "not a cursor!!",
    "bad base64 padding": "abc",
    "one char": "a",
    "no separator": b64(f"{AT.isoformat()}{ID}"),
    "two separators": b64(f"{AT.isoformat()}|{ID}|extra"),
    "only a separator": b64("|"),
    "bad uuid": b64(f"{AT.isoformat()}|not-a-uuid"),
    "truncated uuid": b64(f"{AT.isoformat()}|{str(ID)[:-1]}"),
    "bad timestamp": b64(f"yesterday|{ID}"),
    "empty timestamp": b64(f"|{ID}"),
    "not utf-8 inside": b64(b"\xff\xfe|\xfd"),
    "truncated": encode_cursor(AT, ID)[:-6],
    "lone surrogate": "\ud800",
}


@pytest.mark.parametrize("cursor", BAD.values(), ids=BAD.keys())
def test_a_bad_cursor_is_a_validation_error(cursor: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        decode_cursor(cursor)
    assert str(caught.value) == MESSAGE
    assert caught.value.error_class == "validation"


@pytest.mark.parametrize("cursor", BAD.values(), ids=BAD.keys())
def test_a_bad_cursor_error_does_not_chain_the_parsing_exception(cursor: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        decode_cursor(cursor)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_the_error_never_echoes_the_cursor_or_what_it_decodes_to() -> None:
    secret = "secret-payload-42"
    for cursor in (secret, b64(f"{secret}|{ID}"), b64(f"{AT.isoformat()}|{secret}")):
        with pytest.raises(ValidationFailed) as caught:
            decode_cursor(cursor)
        assert cursor not in str(caught.value) and secret not in str(caught.value)
