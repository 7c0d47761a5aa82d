from sessionvault.core.embedding.providers import LocalEmbedder, NoEmbedder, OpenAIEmbedder, from_settings
from sessionvault.settings import Settings

from ....conftest import free_port


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


def test_the_local_model_keeps_the_name_its_stored_vectors_carry():
    assert LocalEmbedder.model == "local:all-MiniLM-L6-v2"  # rows embedded by the torch path stay valid


def test_a_missing_local_model_yields_no_vector_and_says_how_to_install_it(monkeypatch, caplog):
    from sessionvault.core.embedding import minilm

    monkeypatch.setattr(minilm, "MODEL_MODULE", "sessionvault_no_such_model_package")
    monkeypatch.setattr(LocalEmbedder, "_minilm", None)
    monkeypatch.setattr(LocalEmbedder, "_failed", None)
    embedder = LocalEmbedder()
    with caplog.at_level("WARNING", logger="sessionvault.core.embedding.providers"):
        assert embedder.embed("a session") is None
        assert embedder.embed_many(["one", "two"]) is None
    said = [r.getMessage() for r in caplog.records if "unavailable" in r.getMessage()]
    assert len(said) == 1, said  # once, not per call
    assert minilm.INSTALL_HINT in said[0] and "--no-deps" not in said[0]
