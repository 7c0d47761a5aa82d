"""Secrets the fourth review found kept (issue 35 item 8), as they show up in transcripts:
passwords given to admin tools as flags or on stdin, SQL and code that carry them, prose
credentials, URL user names holding `@`, values past 500 characters, presigned URLs; and
look-alikes that must stay. The lines are written here for this test (made-up secrets, built by
concatenation), not copied from the review. The rule for every secret: removed whole, no run of
eight of its characters left."""

from __future__ import annotations

import pytest

from sessionvault.core.redact import scrub_text
from tests.fixtures.secrets.review4 import LOOK_ALIKES, SECRETS, kept


@pytest.mark.parametrize(("shape", "text", "secret"), SECRETS, ids=[s[0] for s in SECRETS])
def test_the_secret_is_removed_whole(shape: str, text: str, secret: str) -> None:
    clean, kinds = scrub_text(text)
    assert kinds, (shape, clean)
    assert kept(secret, clean) == [], (shape, clean)


@pytest.mark.parametrize(("shape", "text"), LOOK_ALIKES, ids=[s[0] for s in LOOK_ALIKES])
def test_a_look_alike_stays(shape: str, text: str) -> None:
    assert scrub_text(text) == (text, []), shape
