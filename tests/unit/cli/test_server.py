"""`sessionvault dev`/`serve` load the local embedding model at start, in the background, so the
first search_sessions does not wait for it; other embedders are left alone (nothing to load)."""

from __future__ import annotations

import pytest

from sessionvault.cli import server
from sessionvault.core.embedding.providers import LocalEmbedder, NoEmbedder, OpenAIEmbedder


def test_the_local_model_is_loaded_in_the_background_and_said_so(capsys: pytest.CaptureFixture[str]) -> None:
    thread = server.warm_up(LocalEmbedder())
    assert thread is not None and thread.daemon
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert capsys.readouterr().out.startswith(f"{server.WARM_MARK} (local:all-MiniLM-L6-v2, ")


def test_other_embedders_are_not_called_at_start() -> None:
    openai = OpenAIEmbedder("sk-unused", "text-embedding-3-small")
    assert server.warm_up(openai) is None and server.warm_up(NoEmbedder()) is None
    assert openai._client is None  # no client made, no request spent
