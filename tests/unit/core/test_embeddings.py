from sessionvault.core.embeddings import LocalEmbedder, NoEmbedder, OpenAIEmbedder, from_settings
from sessionvault.settings import Settings

from ...conftest import free_port


def test_an_unreachable_provider_yields_no_vector_instead_of_an_error():
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    embedder = OpenAIEmbedder("sk-test", "text-embedding-3-small", base_url=dead, timeout_s=1)
    assert embedder.embed("a session") is None
    assert embedder.model == "openai:text-embedding-3-small"


def test_the_provider_follows_the_settings():
    base = {"database_url": "postgresql://x", "master_key": "k", "audit_salt": "s" * 16}
    assert isinstance(from_settings(Settings(**base, embeddings="local")), LocalEmbedder)
    assert isinstance(from_settings(Settings(**base, embeddings="none")), NoEmbedder)
    openai = from_settings(Settings(**base, embeddings="openai", openai_api_key="sk-real"))
    assert isinstance(openai, OpenAIEmbedder) and openai._client is None  # created on first use only
