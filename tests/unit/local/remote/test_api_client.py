"""The API client's calls: a streamed export, line by line, never a shorter one."""

from __future__ import annotations

import pytest

from sessionvault.errors import (
    ScopeMissing,
    Unavailable,
)
from sessionvault.local.remote import api_client

from .fake_api import HEADER, Canned, Fake, error

# --------------------------------------------------------------------------- export


def test_an_export_streams_line_by_line(fake: Fake) -> None:
    lines = [HEADER + b"\n", b'{"name": "a", "repo": "", "versions": []}\n']
    api = fake.reply(Canned(chunks=[lines[0][:5], lines[0][5:] + lines[1], b""]))
    assert list(api_client.export(api)) == lines


def test_an_export_cut_off_mid_line_is_an_error_not_a_shorter_export(fake: Fake) -> None:
    api = fake.reply(Canned(chunks=[HEADER + b"\n" + b'{"name": "a", "rep', b""]))
    got: list[bytes] = []
    with pytest.raises(Unavailable, match="cut off mid-line"):
        got.extend(api_client.export(api))
    assert got == [HEADER + b"\n"]


def test_an_export_refused_says_why(fake: Fake) -> None:
    with pytest.raises(ScopeMissing):
        list(api_client.export(fake.reply(Canned(403, error("scope", "needs read")))))
