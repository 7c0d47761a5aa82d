"""The opaque list_sessions cursor: (updated_at, session id) of the last row shown, checked on
the way back in so that a forged or truncated cursor is a validation error, not a 500."""

from __future__ import annotations

import base64
import binascii
import uuid
from datetime import datetime
from typing import Any

from sessionvault.errors import ValidationFailed


def encode_cursor(updated_at: datetime, session_id: Any) -> str:
    return base64.urlsafe_b64encode(f"{updated_at.isoformat()}|{session_id}".encode()).decode()


def decode_cursor(cursor: str) -> tuple[datetime, str] | None:
    if not cursor:
        return None
    try:
        stamp, session_id = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        return datetime.fromisoformat(stamp), str(uuid.UUID(session_id))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValidationFailed("invalid arguments: cursor: use next_cursor from list_sessions") from None
