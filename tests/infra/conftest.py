"""Markers for the infrastructure tests (registered here so pyproject.toml stays untouched)."""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: runs the SAM CLI (sam validate --lint, sam build); deselect with -m 'not slow'",
    )
    # Harmless when pytest-timeout is installed (it registers the same marker itself).
    config.addinivalue_line("markers", "timeout(seconds): per-test timeout (pytest-timeout)")
