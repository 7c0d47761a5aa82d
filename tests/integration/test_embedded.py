"""The embedded default keeps everything, its database socket included, in the state folder."""

import shutil
import tempfile
from pathlib import Path

import pytest

from sessionvault.errors import ConfigError
from sessionvault.local.host import embedded


def test_a_state_folder_too_long_for_a_socket_is_refused_not_served_from_tmp():
    base = Path(tempfile.mkdtemp(prefix="sv-long-"))
    try:
        with pytest.raises(ConfigError, match="shorter folder"):
            embedded.start(base / ("x" * 60) / ("y" * 60))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_socket_lives_in_the_state_folder(pg):
    assert f"host={pg.home}" in pg.app_url
