"""Embedding providers behind one interface. A provider failure yields None, never an exception:
the session is saved without an embedding and picked up later by the re-embed job."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Protocol

from sessionvault.settings import Settings

if TYPE_CHECKING:
    from sessionvault.core.embedding.minilm import MiniLM

log = logging.getLogger(__name__)

MAX_INPUT_CHARS = 8000  # well inside both models' context; the head of a session says the most


class Embedder(Protocol):
    model: str  # recorded with every vector: only vectors of the same model are compared

    def embed(self, text: str) -> list[float] | None: ...


class NoEmbedder:
    model = "none"

    def embed(self, text: str) -> list[float] | None:
        return None


class OpenAIEmbedder:
    """text-embedding-3-small, or any OpenAI-compatible endpoint (Ollama, LM Studio)."""

    def __init__(self, api_key: str, model: str, base_url: str = "", timeout_s: float = 10.0):
        self.model = f"openai:{model}"
        self._model = model
        self._api_key, self._base_url = api_key or "unused", base_url or None
        self._timeout = timeout_s
        self._client: Any = None

    @staticmethod
    def prime() -> None:
        """Load the client's code, not a client: for a SnapStart before-snapshot hook, so that a
        restored container's first search skips the SDK's import (~0.35 s in the Lambda layout:
        BENCHMARKS.md, "In the Lambda layout")."""
        import openai.resources.embeddings  # noqa: F401

    def embed(self, text: str) -> list[float] | None:
        try:
            if self._client is None:  # the client is heavy: create it on first use only
                from openai import OpenAI

                self._client = OpenAI(
                    api_key=self._api_key, base_url=self._base_url, timeout=self._timeout, max_retries=1
                )
            out = self._client.embeddings.create(model=self._model, input=text[:MAX_INPUT_CHARS])
            return list(out.data[0].embedding)
        except Exception as exc:
            log.warning("embedding provider failed", extra={"error_type": type(exc).__name__})
            return None


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the sessionvault-minilm package, computed with numpy
    (sessionvault.core.embedding.minilm and .wordpiece; no PyTorch): offline, loaded once per process,
    on a laptop or local server only (local/ is not in the Lambda package). The vectors are
    sentence-transformers' (cosine >= 0.999: tests/integration/test_local_embedder.py), so rows
    embedded by the earlier torch path keep matching: the model name recorded is unchanged."""

    model = "local:all-MiniLM-L6-v2"
    _lock = threading.Lock()
    _minilm: MiniLM | None = None
    _failed: str | None = None  # the model could not be loaded: said once in the log

    @classmethod
    def _load(cls) -> MiniLM:
        with cls._lock:
            if cls._minilm is None:
                from sessionvault.core.embedding.minilm import MiniLM

                cls._minilm = MiniLM()
            return cls._minilm

    def embed(self, text: str) -> list[float] | None:
        vectors = self.embed_many([text])
        return vectors[0] if vectors else None

    def embed_many(self, texts: list[str]) -> list[list[float]] | None:
        """One vector per text, in batches (faster than one call per text); None on failure."""
        try:
            minilm = self._load()
        except Exception as exc:  # not installed: said once, with the fix (no session text in it)
            if LocalEmbedder._failed is None:
                LocalEmbedder._failed = type(exc).__name__
                hint = 'pip install "sessionvault[local]"' if isinstance(exc, ImportError) else ""
                log.warning("local embedding model unavailable: %s %s", exc, hint)
            log.warning("local embedding failed", extra={"error_type": type(exc).__name__})
            return None
        try:
            out = minilm.embed([t[:MAX_INPUT_CHARS] for t in texts])
            return [[float(x) for x in row] for row in out]
        except Exception as exc:  # the type only: a message could quote the text
            log.warning("local embedding failed", extra={"error_type": type(exc).__name__})
            return None


def from_settings(settings: Settings) -> Embedder:
    if settings.embeddings == "openai":
        return OpenAIEmbedder(
            settings.openai_api_key,
            settings.openai_model,
            settings.openai_base_url,
            settings.embed_timeout_s,
        )
    if settings.embeddings == "local":
        return LocalEmbedder()
    return NoEmbedder()
